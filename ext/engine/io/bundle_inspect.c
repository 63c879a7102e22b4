/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Inspecting a bundle: its header, sections (with stored and computed
 * checksums, a damaged section reported rather than refused) and tensors,
 * without building a model.
 */
#include "bundle_stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tt_status
bundle_inspect (bundle * b, tt_bundle_info * info, tt_error * err)
{
  memset (info, 0, sizeof *info);
  tt_status st = tt_bundle_read_meta (b, false, err);
  if (st)
    return st;
  uint32_t crc;
  if ((st = tt_bundle_weights_crc (b, &crc, err)))
    return st;
  b->weights->crc_computed = crc;
  b->weights->crc_known = true;
  b->weights->crc_ok = crc == b->weights->crc;
  info->version = b->version;
  info->file_size = b->file_size;
  info->header_bytes = b->header_len;
  info->alignment = b->alignment;
  info->batch_size = b->batch_size;
  info->has_moments = (b->wflags & B_WF_MOMENTS) != 0;
  info->has_counters = (b->wflags & B_WF_COUNTERS) != 0;
  info->epoch = b->epoch;
  info->iteration = b->iteration;
  info->n_sections = B_SECTIONS;
  info->checksums_ok = true;
  for (int i = 0; i < B_SECTIONS; i++) {
    const b_section *s = &b->sec[i];
    tt_bundle_section_info *o = &info->sections[i];
    o->type = s->type;
    o->name = tt_bundle_section_name (s->type);
    o->flags = s->flags;
    o->offset = s->offset;
    o->length = s->length;
    o->raw_length = s->raw_length;
    o->crc32_stored = s->crc;
    o->crc32_computed = s->crc_computed;
    o->checksum_ok = s->crc_ok;
    info->checksums_ok &= s->crc_ok;
  }
  if (b->index_ok) {
    info->tensors = calloc (b->n_tensors ? b->n_tensors : 1,
        sizeof *info->tensors);
    if (!info->tensors)
      return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", b->name);
    info->n_tensors = b->n_tensors;
    for (uint32_t i = 0; i < b->n_tensors; i++) {
      tt_bundle_tensor_info *t = &info->tensors[i];
      snprintf (t->name, sizeof t->name, "%.*s", (int) b->tensors[i].name_len,
          b->tensors[i].name);
      t->kind = b->tensors[i].kind;
      t->offset = b->tensors[i].offset;
      t->bytes = b->tensors[i].bytes;
    }
  }
  return TT_OK;
}

tt_status
tt_bundle_inspect (const char *path, tt_bundle_info * info, tt_error * err)
{
  bundle b;
  tt_status st = tt_bundle_open_file (&b, path, false, err);
  if (!st)
    st = bundle_inspect (&b, info, err);
  tt_bundle_close (&b);
  return st;
}

tt_status
tt_bundle_inspect_memory (const void *data, size_t len, const char *name,
    tt_bundle_info * info, tt_error * err)
{
  bundle b;
  tt_bundle_open_memory (&b, data, len, name);
  tt_status st = bundle_inspect (&b, info, err);
  tt_bundle_close (&b);
  return st;
}

void
tt_bundle_info_clear (tt_bundle_info * info)
{
  free (info->tensors);
  memset (info, 0, sizeof *info);
}
