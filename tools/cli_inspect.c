/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor-trainer inspect: a bundle's header, sections (checksums
 * verified) and tensors; exits 1 when a checksum does not match.
 */
#include "cli.h"
#include "tt_bundle.h"

#include <inttypes.h>
#include <stdio.h>

static const char *
cli_kind_name (uint32_t kind)
{
  return kind == 0 ? "weight" : kind == 1 ? "adam_m" : "adam_v";
}

int
cli_inspect (const cli_options * o)
{
  tt_bundle_info info;
  tt_error err;
  if (tt_bundle_inspect (o->model, &info, &err))
    return cli_fail ("%s", err.message);
  printf ("bundle=%s version=%u size=%" PRIu64 " header_bytes=%u "
      "alignment=%u batch_size=%u\n", o->model, info.version, info.file_size,
      info.header_bytes, info.alignment, info.batch_size);
  printf ("moments=%s counters=%s epoch=%u iteration=%u tensors=%u\n",
      info.has_moments ? "yes" : "no", info.has_counters ? "yes" : "no",
      info.epoch, info.iteration, info.n_tensors);
  printf ("%-8s %4s %12s %12s %12s %5s %8s  %s\n", "section", "type",
      "offset", "length", "raw_length", "flags", "crc32", "checksum");
  for (uint32_t i = 0; i < info.n_sections; i++) {
    const tt_bundle_section_info *sc = &info.sections[i];
    char status[64];
    if (sc->checksum_ok)
      snprintf (status, sizeof status, "ok");
    else
      snprintf (status, sizeof status, "MISMATCH (computed %08x)",
          sc->crc32_computed);
    printf ("%-8s %4u %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %5s %08x  "
        "%s\n", sc->name, sc->type, sc->offset, sc->length, sc->raw_length,
        sc->flags & TT_BUNDLE_SECTION_ZLIB ? "zlib" : "-", sc->crc32_stored,
        status);
  }
  printf ("%-40s %-7s %14s %14s\n", "tensor", "kind", "offset", "bytes");
  const tt_bundle_section_info *w = &info.sections[2];
  for (uint32_t i = 0; i < info.n_sections; i++)
    if (info.sections[i].type == TT_BUNDLE_SECTION_WEIGHTS)
      w = &info.sections[i];
  for (uint32_t i = 0; i < info.n_tensors; i++) {
    const tt_bundle_tensor_info *t = &info.tensors[i];
    printf ("%-40s %-7s %14" PRIu64 " %14" PRIu64 "\n", t->name,
        cli_kind_name (t->kind), t->offset, t->bytes);
  }
  printf ("weights_in_file_at=%" PRIu64 " (%s)\nchecksums=%s\n", w->offset,
      w->flags & TT_BUNDLE_SECTION_ZLIB ? "compressed: loads by "
      "decompressing into the pool" : "uncompressed: can be mapped and used "
      "in place", info.checksums_ok ? "ok" : "MISMATCH");
  int rc = info.checksums_ok ? 0 : 1;
  tt_bundle_info_clear (&info);
  return rc;
}
