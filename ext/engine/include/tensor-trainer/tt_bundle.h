/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Model bundles: one file holding a model's INI text (with its memory plan
 * when it was planned), its weights, its optimizer state and its counters
 * (format in docs/bundle.md). Little-endian, versioned, a length-prefixed
 * header with a section table, a CRC32 per section, every tensor aligned
 * (64 bytes by default) so an uncompressed bundle can be mapped and its
 * weights used in place. Every offset and length is checked against the
 * file before it is used.
 *
 *   save            tt_model_save() (by extension) or tt_bundle_save()
 *   load            tt_bundle_load() from a path (read, mmap or in place)
 *                   tt_bundle_load_memory() from a blob (a linked symbol)
 *   pack / unpack   INI + BIN <-> bundle, byte for byte
 *   inspect         header, sections, checksums, tensors
 */
#ifndef TT_BUNDLE_H
#define TT_BUNDLE_H

#include "tt_engine.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TT_BUNDLE_VERSION 1
#define TT_BUNDLE_DEFAULT_ALIGNMENT 64
#define TT_BUNDLE_MAX_ALIGNMENT 65536

/* How to write a bundle. Zero-initialized means the defaults. */
typedef struct {
  uint32_t alignment;   /* of every tensor's data: a power of two in
                         * [4, 65536]; 0 means 64; 4096 (or the page size)
                         * for page-aligned tensors */
  bool compress;        /* zlib the weight section (cannot be used in
                         * place; it decompresses straight into the pool) */
  int level;            /* zlib level 1..9; 0 means zlib's default (6) */
} tt_bundle_options;

/* Writes a compiled model as a bundle, atomically: the INI text with its
 * plan (unless the model was compiled TT_PLAN_NAIVE: then the text as
 * loaded), the weights, the adam moments, the epoch and iteration
 * counters. options may be NULL. */
TT_API tt_status tt_bundle_save (tt_model * model, const char *path,
    const tt_bundle_options * options, tt_error * err);

/* tt_model_save (options NULL) or tt_bundle_save (options), and when that
 * fails for a reason of the medium (TT_ERR_IO: disk full, folder removed),
 * the model saved instead, atomically and in the same form (extension
 * kept), as NAME.rescued-YYYYmmdd-HHMMSS-PID.EXT beside path, else in
 * $TMPDIR, else in /tmp. The status is still the failure (path was not
 * written); saved_to (cap bytes) gets the file written, "" when none, and
 * the message says where it went. Refusals (non-finite weights, an .ini
 * name) write nothing anywhere. */
TT_API tt_status tt_model_save_with_fallback (tt_model * model,
    const char *path, const tt_bundle_options * options, char *saved_to,
    size_t cap, tt_error * err);

/* Packs an INI file and a BIN file into a bundle, both stored exactly as
 * they are (the BIN's optional parts too), so that tt_bundle_unpack gives
 * back the same bytes. The model is compiled (batch_size 0: the INI's) to
 * learn its tensors, and the BIN is checked as tt_model_load_bin does. */
TT_API tt_status tt_bundle_pack (const char *ini_path, const char *bin_path,
    const char *bundle_path, uint32_t batch_size,
    const tt_bundle_options * options, tt_error * err);

/* Writes the bundle's INI text and its weights as a BIN (weights, then
 * "adam" and the moments and the counters when the bundle has them),
 * atomically, after checking every checksum. Either path may be NULL. */
TT_API tt_status tt_bundle_unpack (const char *bundle_path,
    const char *ini_path, const char *bin_path, tt_error * err);

/* (tt_bundle_mode, how a bundle's weights are read, is in tt_engine.h:
 * tt_model_open takes it too) */

/* How to open a bundle as a model. Zero-initialized means the defaults. */
typedef struct {
  tt_bundle_mode mode;  /* for a blob in memory, READ and MMAP both copy */
  uint32_t batch_size;  /* 0: the batch the bundle was saved with */
  tt_plan_mode plan_mode;
  bool inference;       /* compile for inference only (tt_engine.h:
                         * tt_model_set_inference); moments are skipped */
  bool has_seed;        /* else the engine's default seed */
  uint64_t seed;
  bool trust;           /* skip the weight checksum and the finiteness
                         * check (the header, INI and index are always
                         * checked): with TT_BUNDLE_IN_PLACE nothing of the
                         * weights is read until evaluation needs it. For
                         * blobs that are part of the program image. */
} tt_bundle_load_options;

/* Opens a bundle as a compiled model with its weights, moments and
 * counters; options may be NULL. With TT_BUNDLE_IN_PLACE the model keeps
 * the file mapped until tt_model_free; training, loading or initializing
 * weights then fail with a message saying so. */
TT_API tt_model *tt_bundle_load (const char *path,
    const tt_bundle_load_options * options, tt_error * err);

/* The same from a bundle in memory: no file system. With
 * TT_BUNDLE_IN_PLACE the weights point into data, which must stay valid
 * and unchanged until tt_model_free, and be aligned to the bundle's
 * alignment (at most 64 is required); other modes copy. name stands for
 * the file in messages (NULL: "<memory>"). */
TT_API tt_model *tt_bundle_load_memory (const void *data, size_t len,
    const char *name, const tt_bundle_load_options * options,
    tt_error * err);

/* Loads a bundle's weights (and moments and counters, when it has them)
 * into a compiled model whose tensors match the bundle's: checked first,
 * so a bad bundle leaves the model untouched. */
TT_API tt_status tt_bundle_load_weights (tt_model * model, const char *path,
    tt_error * err);

/* true when the file starts with the bundle magic. */
TT_API bool tt_bundle_is_bundle (const char *path);

/* ---- inspection ------------------------------------------------------ */

typedef enum {
  TT_BUNDLE_SECTION_INI = 1,
  TT_BUNDLE_SECTION_INDEX = 2,
  TT_BUNDLE_SECTION_WEIGHTS = 3,
} tt_bundle_section_type;

#define TT_BUNDLE_SECTION_ZLIB 1u       /* section flag */

typedef struct {
  uint32_t type;
  const char *name;             /* "ini", "index", "weights" */
  uint32_t flags;
  uint64_t offset, length;      /* in the file */
  uint64_t raw_length;          /* uncompressed */
  uint32_t crc32_stored, crc32_computed;
  bool checksum_ok;
} tt_bundle_section_info;

typedef struct {
  char name[160];
  uint32_t kind;                /* 0 weight, 1 adam first moment, 2 second */
  uint64_t offset;              /* in the uncompressed weight section */
  uint64_t bytes;
} tt_bundle_tensor_info;

typedef struct {
  uint32_t version;
  uint64_t file_size;
  uint32_t header_bytes;        /* the length-prefixed header */
  uint32_t alignment;
  uint32_t batch_size;          /* the model was saved compiled for it */
  bool has_moments, has_counters;
  uint32_t epoch, iteration;
  uint32_t n_sections;
  tt_bundle_section_info sections[3];
  bool checksums_ok;            /* every section's */
  uint32_t n_tensors;
  tt_bundle_tensor_info *tensors;       /* free with tt_bundle_info_clear */
} tt_bundle_info;

/* Reads the header and index and computes every checksum. TT_OK when the
 * structure is sound, even if a checksum is wrong: see checksums_ok and
 * each section's checksum_ok. */
TT_API tt_status tt_bundle_inspect (const char *path, tt_bundle_info * info,
    tt_error * err);
TT_API tt_status tt_bundle_inspect_memory (const void *data, size_t len,
    const char *name, tt_bundle_info * info, tt_error * err);
TT_API void tt_bundle_info_clear (tt_bundle_info * info);

#ifdef __cplusplus
}
#endif
#endif
