/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: ONNX import (tt_onnx_convert, ext/onnx/) of the input's
 * bytes as an ONNX model. A refusal is a status with a message naming the
 * model; an accepted model gives INI text and a BIN of whole floats that
 * the engine loads, compiles (batch 1) and fills from the BIN again here,
 * independently of the importer's own check. Built by run.sh when
 * protoc-c, libprotobuf-c and onnx.proto are present.
 */
#include "fuzz_common.h"
#include "tt_onnx.h"

int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  char *ini = NULL;
  unsigned char *bin = NULL;
  size_t ini_len = 0, bin_len = 0;
  tt_error err;
  memset (&err, 0, sizeof err);
  tt_status st = tt_onnx_convert (data, size, "fuzz.onnx", NULL, &ini,
      &ini_len, &bin, &bin_len, &err);
  if (st) {
    FUZZ_CHECK (!ini && !bin, "output after a refusal");
    FUZZ_CHECK (!strncmp (err.message, "fuzz.onnx: ", 11) &&
        strlen (err.message) > 11, "message '%s'", err.message);
    return 0;
  }
  FUZZ_CHECK (ini && ini_len > 0 && bin_len % 4 == 0, "output sizes");
  tt_model *m = tt_model_load_ini_text (ini, ini_len, "fuzz.ini", &err);
  FUZZ_CHECK (m, "the imported INI does not load: %s", err.message);
  st = tt_model_set_batch_size (m, 1, &err);
  if (!st)
    st = tt_model_compile (m, &err);
  /* the pool cap may refuse a large model; anything else is a bug */
  FUZZ_CHECK (!st || st == TT_ERR_NOMEM, "compile: %s", err.message);
  if (!st)
    FUZZ_CHECK (!tt_model_load_bin_memory (m, bin, bin_len, "fuzz.bin",
            &err), "the imported BIN does not load: %s", err.message);
  tt_model_free (m);
  free (ini);
  free (bin);
  return 0;
}
