/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reading a bundle's metadata (the format: bundle_format.h): the source (a
 * file, a mapping or a blob) and reads bounded by it, the preamble, the
 * header with its section table, and the ini and index sections.
 *
 * Nothing in a bundle is trusted: every offset and length is bounded by
 * the file before use, sections may not overlap, padding must be zero,
 * tensor offsets must be the canonical ones, and each section's CRC32 is
 * checked before its content is used (for the weights read from a file,
 * while they stream into the pool: a damaged file fails the load, and the
 * model being built is freed).
 */
#include "bundle_parse.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

void
tt_bundle_close (bundle * b)
{
  if (b->map)
    munmap (b->map, b->map_len);
  if (b->fd >= 0)
    close (b->fd);
  free (b->ini_text);
  free (b->index_data);
  free (b->tensors);
  memset (b, 0, sizeof *b);
  b->fd = -1;
}

/* len bytes at off of the source; off + len must lie in it. */
tt_status
tt_bundle_read (bundle * b, uint64_t off, void *dst, uint64_t len,
    tt_error * err)
{
  if (off > b->size || len > b->size - off)
    return tt_fail (err, TT_ERR_PARSE, "%s: truncated: bytes [%" PRIu64
        ", %" PRIu64 ") lie past the end (%" PRIu64 " bytes)", b->name, off,
        off + len, b->size);
  if (b->mem) {
    memcpy (dst, b->mem + off, (size_t) len);
    return TT_OK;
  }
  unsigned char *p = dst;
  while (len > 0) {
    size_t want = len > (1u << 30) ? (1u << 30) : (size_t) len;
    ssize_t n = pread (b->fd, p, want, (off_t) off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return tt_fail (err, TT_ERR_IO, "%s: read failed at byte %" PRIu64
          ": %s", b->name, off, n < 0 ? strerror (errno) :
          "the file shrank while reading");
    p += n;
    off += (uint64_t) n;
    len -= (uint64_t) n;
  }
  return TT_OK;
}

tt_status
tt_bundle_open_file (bundle * b, const char *path, bool map, tt_error * err)
{
  memset (b, 0, sizeof *b);
  b->fd = -1;
  b->name = path;
  if (!path)
    return tt_fail (err, TT_ERR_INVALID, "no bundle path given");
  b->fd = open (path, O_RDONLY | O_CLOEXEC);
  if (b->fd < 0)
    return tt_fail (err, TT_ERR_IO, "%s: cannot open: %s", path,
        strerror (errno));
  struct stat sb;
  if (fstat (b->fd, &sb) != 0 || !S_ISREG (sb.st_mode))
    return tt_fail (err, TT_ERR_IO, "%s: not a regular file", path);
  b->size = (uint64_t) sb.st_size;
  if (map && b->size >= B_PREAMBLE) {
    if (b->size > SIZE_MAX)
      return tt_fail (err, TT_ERR_NOMEM, "%s: too large to map", path);
    void *p = mmap (NULL, (size_t) b->size, PROT_READ, MAP_PRIVATE, b->fd, 0);
    if (p == MAP_FAILED)
      return tt_fail (err, TT_ERR_IO, "%s: cannot map: %s", path,
          strerror (errno));
    b->map = p;
    b->map_len = (size_t) b->size;
    b->mem = p;
  }
  return TT_OK;
}

void
tt_bundle_open_memory (bundle * b, const void *data, size_t len,
    const char *name)
{
  memset (b, 0, sizeof *b);
  b->fd = -1;
  b->name = name ? name : "<memory>";
  b->mem = data;
  b->size = data ? len : 0;
}

/* ---- parsing: preamble, header, section table ------------------------- */

tt_status
tt_bundle_parse_header (bundle * b, tt_error * err)
{
  unsigned char pre[B_PREAMBLE];
  tt_status st;
  const char *n = b->name;
  if (b->size >= sizeof tt_bundle_magic) {
    if ((st = tt_bundle_read (b, 0, pre, sizeof tt_bundle_magic, err)))
      return st;
    if (memcmp (pre, tt_bundle_magic, sizeof tt_bundle_magic) != 0)
      return tt_fail (err, TT_ERR_PARSE, "%s: not a tensor-trainer bundle: "
          "bad magic (%02x %02x %02x %02x %02x %02x %02x %02x, expected 89 "
          "54 54 42 0d 0a 1a 0a)", n, pre[0], pre[1], pre[2], pre[3], pre[4],
          pre[5], pre[6], pre[7]);
  }
  if (b->size < B_PREAMBLE)
    return tt_fail (err, TT_ERR_PARSE, "%s: truncated: %" PRIu64 " bytes, "
        "less than the %d-byte preamble of a bundle", n, b->size, B_PREAMBLE);
  if ((st = tt_bundle_read (b, 0, pre, B_PREAMBLE, err)))
    return st;
  b->version = tt_le_get32 (pre + 8);
  b->header_len = tt_le_get32 (pre + 12);
  b->header_crc = tt_le_get32 (pre + 16);
  if (b->version != TT_BUNDLE_VERSION)
    return tt_fail (err, TT_ERR_PARSE, "%s: format version %u is not one "
        "this engine reads (%d)", n, b->version, TT_BUNDLE_VERSION);
  if (tt_le_get32 (pre + 20) != 0)
    return tt_fail (err, TT_ERR_PARSE, "%s: preamble bytes 20..23 are "
        "reserved and must be zero", n);
  if (b->header_len > b->size - B_PREAMBLE)
    return tt_fail (err, TT_ERR_PARSE, "%s: header length %u runs past the "
        "end of the file (%" PRIu64 " bytes): truncated or damaged", n,
        b->header_len, b->size);
  if (b->header_len < B_HEADER_FIXED || b->header_len > 4096)
    return tt_fail (err, TT_ERR_PARSE, "%s: header length %u is not a "
        "version-%d header's (%d)", n, b->header_len, TT_BUNDLE_VERSION,
        B_HEADER_BYTES);
  unsigned char h[4096];
  if ((st = tt_bundle_read (b, B_PREAMBLE, h, b->header_len, err)))
    return st;
  uint32_t crc = tt_bundle_crc (0, h, b->header_len);
  if (crc != b->header_crc)
    return tt_fail (err, TT_ERR_PARSE, "%s: header checksum mismatch "
        "(stored %08x, computed %08x): the bundle is damaged", n,
        b->header_crc, crc);

  b->file_size = tt_le_get64 (h);
  b->alignment = tt_le_get32 (h + 8);
  b->n_sections = tt_le_get32 (h + 12);
  b->flags = tt_le_get32 (h + 16);
  b->batch_size = tt_le_get32 (h + 20);
  b->wflags = tt_le_get32 (h + 24);
  b->epoch = tt_le_get32 (h + 28);
  b->iteration = tt_le_get32 (h + 32);
  b->n_tensors = tt_le_get32 (h + 36);
  if (b->n_sections != B_SECTIONS)
    return tt_fail (err, TT_ERR_PARSE, "%s: the header lists %u sections; "
        "version %d has exactly %d (ini, index, weights)", n, b->n_sections,
        TT_BUNDLE_VERSION, B_SECTIONS);
  if (b->header_len != B_HEADER_BYTES)
    return tt_fail (err, TT_ERR_PARSE, "%s: header length %u does not match "
        "its %u sections (%d bytes)", n, b->header_len, b->n_sections,
        B_HEADER_BYTES);
  if (b->alignment < 4 || b->alignment > TT_BUNDLE_MAX_ALIGNMENT ||
      (b->alignment & (b->alignment - 1)))
    return tt_fail (err, TT_ERR_PARSE, "%s: alignment %u is not a power of "
        "two in [4, %d]", n, b->alignment, TT_BUNDLE_MAX_ALIGNMENT);
  if (b->flags != 0)
    return tt_fail (err, TT_ERR_PARSE, "%s: unknown header flags 0x%x", n,
        b->flags);
  if (b->wflags & ~(B_WF_MOMENTS | B_WF_COUNTERS))
    return tt_fail (err, TT_ERR_PARSE, "%s: unknown weight flags 0x%x", n,
        b->wflags);
  if (b->batch_size > (1u << 16))
    return tt_fail (err, TT_ERR_PARSE, "%s: batch size %u is out of range "
        "[0, 65536]", n, b->batch_size);
  if (b->n_tensors > B_MAX_TENSORS)
    return tt_fail (err, TT_ERR_PARSE, "%s: %u tensors, more than %u", n,
        b->n_tensors, B_MAX_TENSORS);
  if (b->file_size > b->size)
    return tt_fail (err, TT_ERR_PARSE, "%s: truncated: the header records %"
        PRIu64 " bytes, the file has %" PRIu64, n, b->file_size, b->size);
  if (b->file_size < b->size)
    return tt_fail (err, TT_ERR_PARSE, "%s: %" PRIu64 " bytes of trailing "
        "data after the %" PRIu64 " bytes the header records", n,
        b->size - b->file_size, b->file_size);

  const uint64_t data_start = B_PREAMBLE + (uint64_t) b->header_len;
  for (uint32_t i = 0; i < B_SECTIONS; i++) {
    const unsigned char *e = h + B_HEADER_FIXED + i * B_SECTION_ENTRY;
    b_section *s = &b->sec[i];
    s->type = tt_le_get32 (e);
    s->flags = tt_le_get32 (e + 4);
    s->offset = tt_le_get64 (e + 8);
    s->length = tt_le_get64 (e + 16);
    s->raw_length = tt_le_get64 (e + 24);
    s->crc = tt_le_get32 (e + 32);
    b_section **slot = s->type == TT_BUNDLE_SECTION_INI ? &b->ini :
        s->type == TT_BUNDLE_SECTION_INDEX ? &b->index :
        s->type == TT_BUNDLE_SECTION_WEIGHTS ? &b->weights : NULL;
    if (!slot)
      return tt_fail (err, TT_ERR_PARSE, "%s: section %u has the unknown "
          "type %u", n, i, s->type);
    const char *sn = tt_bundle_section_name (s->type);
    if (*slot)
      return tt_fail (err, TT_ERR_PARSE, "%s: two %s sections", n, sn);
    *slot = s;
    if (tt_le_get32 (e + 36) != 0)
      return tt_fail (err, TT_ERR_PARSE, "%s: section %s: reserved field "
          "is not zero", n, sn);
    if (s->flags & ~TT_BUNDLE_SECTION_ZLIB)
      return tt_fail (err, TT_ERR_PARSE, "%s: section %s: unknown flags "
          "0x%x", n, sn, s->flags);
    if ((s->flags & TT_BUNDLE_SECTION_ZLIB) &&
        s->type != TT_BUNDLE_SECTION_WEIGHTS)
      return tt_fail (err, TT_ERR_PARSE, "%s: section %s: only the weight "
          "section may be compressed", n, sn);
    if (s->offset > b->file_size || s->length > b->file_size - s->offset)
      return tt_fail (err, TT_ERR_PARSE, "%s: section %s: %" PRIu64 " bytes "
          "at offset %" PRIu64 " run past the end of the bundle (%" PRIu64
          " bytes)", n, sn, s->length, s->offset, b->file_size);
    if (s->offset < data_start)
      return tt_fail (err, TT_ERR_PARSE, "%s: section %s starts at %" PRIu64
          ", inside the header (which ends at %" PRIu64 ")", n, sn,
          s->offset, data_start);
    if (!(s->flags & TT_BUNDLE_SECTION_ZLIB) && s->raw_length != s->length)
      return tt_fail (err, TT_ERR_PARSE, "%s: section %s: uncompressed, yet "
          "its raw length %" PRIu64 " differs from its length %" PRIu64, n,
          sn, s->raw_length, s->length);
    if (s->raw_length > B_MAX_RAW)
      return tt_fail (err, TT_ERR_PARSE, "%s: section %s: raw length %"
          PRIu64 " is more than 2^46", n, sn, s->raw_length);
  }
  if (b->weights->offset % b->alignment)
    return tt_fail (err, TT_ERR_PARSE, "%s: section weights: offset %" PRIu64
        " is not a multiple of the alignment %u", n, b->weights->offset,
        b->alignment);
  if (b->ini->length > B_MAX_INI)
    return tt_fail (err, TT_ERR_PARSE, "%s: section ini: %" PRIu64 " bytes, "
        "more than %u MiB", n, b->ini->length, B_MAX_INI >> 20);
  if (b->index->length > (uint64_t) B_MAX_TENSORS * (B_INDEX_ENTRY +
          B_MAX_NAME))
    return tt_fail (err, TT_ERR_PARSE, "%s: section index: %" PRIu64 " bytes "
        "is more than any index holds", n, b->index->length);

  /* in file order: no overlap, padding below the alignment and zero, and
   * nothing after the last section */
  b_section *order[B_SECTIONS];
  for (int i = 0; i < B_SECTIONS; i++)
    order[i] = &b->sec[i];
  for (int i = 1; i < B_SECTIONS; i++)
    for (int k = i; k > 0 && order[k]->offset < order[k - 1]->offset; k--) {
      b_section *t = order[k];
      order[k] = order[k - 1];
      order[k - 1] = t;
    }
  uint64_t at = data_start;
  const uint64_t max_gap = b->alignment > 8 ? b->alignment : 8;
  for (int i = 0; i < B_SECTIONS; i++) {
    const b_section *s = order[i];
    if (i > 0 && s->offset < at)
      return tt_fail (err, TT_ERR_PARSE, "%s: sections %s [%" PRIu64 ", %"
          PRIu64 ") and %s [%" PRIu64 ", %" PRIu64 ") overlap", n,
          tt_bundle_section_name (order[i - 1]->type), order[i - 1]->offset, at,
          tt_bundle_section_name (s->type), s->offset, s->offset + s->length);
    uint64_t gap = s->offset - at;
    if (gap >= max_gap)
      return tt_fail (err, TT_ERR_PARSE, "%s: %" PRIu64 " unused bytes "
          "before section %s (padding is less than %" PRIu64 ")", n, gap,
          tt_bundle_section_name (s->type), max_gap);
    for (uint64_t k = 0; k < gap;) {
      unsigned char pad[512];
      uint64_t take = gap - k > sizeof pad ? sizeof pad : gap - k;
      if ((st = tt_bundle_read (b, at + k, pad, take, err)))
        return st;
      for (uint64_t j = 0; j < take; j++)
        if (pad[j])
          return tt_fail (err, TT_ERR_PARSE, "%s: the padding before "
              "section %s (bytes %" PRIu64 "..%" PRIu64 ") is not zero", n,
              tt_bundle_section_name (s->type), at, s->offset - 1);
      k += take;
    }
    at = s->offset + s->length;
  }
  if (at != b->file_size)
    return tt_fail (err, TT_ERR_PARSE, "%s: %" PRIu64 " unused bytes after "
        "the last section", n, b->file_size - at);
  return TT_OK;
}

/* ---- the ini and index sections ----------------------------------------- */

static tt_status
bundle_section_crc (bundle * b, b_section * s, const void *data,
    bool strict, tt_error * err)
{
  s->crc_computed = tt_bundle_crc (0, data, s->length);
  s->crc_known = true;
  s->crc_ok = s->crc_computed == s->crc;
  if (!s->crc_ok && strict)
    return tt_fail (err, TT_ERR_PARSE, "%s: section %s: checksum mismatch "
        "(stored %08x, computed %08x): the bundle is damaged", b->name,
        tt_bundle_section_name (s->type), s->crc, s->crc_computed);
  return TT_OK;
}

static tt_status
bundle_parse_index (bundle * b, tt_error * err)
{
  const char *n = b->name;
  const uint64_t len = b->index->length;
  const uint64_t entries = (uint64_t) b->n_tensors * B_INDEX_ENTRY;
  if (entries > len)
    return tt_fail (err, TT_ERR_PARSE, "%s: section index: %u entries need "
        "%" PRIu64 " bytes, the section has %" PRIu64, n, b->n_tensors,
        entries, len);
  const unsigned char *names = b->index_data + entries;
  const uint64_t names_len = len - entries;
  b->tensors = calloc (b->n_tensors ? b->n_tensors : 1, sizeof *b->tensors);
  if (!b->tensors)
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", n);
  const uint64_t raw = b->weights->raw_length;
  uint64_t end = 0;
  uint32_t prev_kind = 0;
  for (uint32_t i = 0; i < b->n_tensors; i++) {
    const unsigned char *e = b->index_data + (uint64_t) i * B_INDEX_ENTRY;
    b_tensor *t = &b->tensors[i];
    t->offset = tt_le_get64 (e);
    t->bytes = tt_le_get64 (e + 8);
    uint32_t name_off = tt_le_get32 (e + 16);
    t->name_len = tt_le_get32 (e + 20);
    t->kind = tt_le_get32 (e + 24);
    if (tt_le_get32 (e + 28) != 0)
      return tt_fail (err, TT_ERR_PARSE, "%s: section index: entry %u: "
          "reserved field is not zero", n, i);
    if (t->name_len < 1 || t->name_len > B_MAX_NAME ||
        name_off > names_len || t->name_len > names_len - name_off)
      return tt_fail (err, TT_ERR_PARSE, "%s: section index: entry %u: name "
          "(%u bytes at %u) lies outside the %" PRIu64 "-byte name table or "
          "is not 1..%d bytes", n, i, t->name_len, name_off, names_len,
          B_MAX_NAME);
    t->name = (const char *) names + name_off;
    if (memchr (t->name, '\0', t->name_len))
      return tt_fail (err, TT_ERR_PARSE, "%s: section index: entry %u: the "
          "name holds a NUL byte", n, i);
    const int nl = (int) t->name_len;
    if (t->kind > 2)
      return tt_fail (err, TT_ERR_PARSE, "%s: tensor %.*s: unknown kind %u",
          n, nl, t->name, t->kind);
    if (t->kind != 0 && !(b->wflags & B_WF_MOMENTS))
      return tt_fail (err, TT_ERR_PARSE, "%s: tensor %.*s is an adam moment "
          "but the header says the bundle holds none", n, nl, t->name);
    /* weights first, then each trainable weight's first and second
     * moments: the order of a BIN */
    bool order_ok = (prev_kind == 0 && t->kind != 2) ||
        (prev_kind == 1 && t->kind == 2) || (prev_kind == 2 && t->kind == 1);
    if (i > 0 && !order_ok)
      return tt_fail (err, TT_ERR_PARSE, "%s: tensor %.*s (kind %u) is out "
          "of order after kind %u: weights come first, then first and "
          "second moments in turn", n, nl, t->name, t->kind, prev_kind);
    if (i == 0 && t->kind == 2)
      return tt_fail (err, TT_ERR_PARSE, "%s: tensor %.*s: a second moment "
          "comes first", n, nl, t->name);
    prev_kind = t->kind;
    if (t->bytes % sizeof (float))
      return tt_fail (err, TT_ERR_PARSE, "%s: tensor %.*s: %" PRIu64 " bytes "
          "is not a whole number of floats", n, nl, t->name, t->bytes);
    uint64_t want = tt_bundle_align_up (end, b->alignment);
    if (t->offset != want)
      return tt_fail (err, TT_ERR_PARSE, "%s: tensor %.*s: offset %" PRIu64
          ", expected %" PRIu64 " (the previous tensor's end rounded up to "
          "the alignment %u)", n, nl, t->name, t->offset, want, b->alignment);
    if (t->offset > raw || t->bytes > raw - t->offset)
      return tt_fail (err, TT_ERR_PARSE, "%s: tensor %.*s: %" PRIu64 " bytes "
          "at %" PRIu64 " run past the end of the weight section (%" PRIu64
          " bytes)", n, nl, t->name, t->bytes, t->offset, raw);
    end = t->offset + t->bytes;
  }
  if (prev_kind == 1)
    return tt_fail (err, TT_ERR_PARSE, "%s: the last tensor is a first "
        "moment without its second", n);
  if (end != raw)
    return tt_fail (err, TT_ERR_PARSE, "%s: the weight section holds %"
        PRIu64 " bytes but its tensors end at %" PRIu64, n, raw, end);
  b->index_ok = true;
  return TT_OK;
}

/* The header, then the ini and index sections; strict: a checksum mismatch
 * is an error (else it is recorded for inspection). */
tt_status
tt_bundle_read_meta (bundle * b, bool strict, tt_error * err)
{
  tt_status st;
  if ((st = tt_bundle_parse_header (b, err)))
    return st;
  b->ini_text = malloc (b->ini->length + 1);
  b->index_data = malloc (b->index->length + 1);
  if (!b->ini_text || !b->index_data)
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", b->name);
  if ((st = tt_bundle_read (b, b->ini->offset, b->ini_text, b->ini->length,
              err)) ||
      (st = bundle_section_crc (b, b->ini, b->ini_text, strict, err)) ||
      (st = tt_bundle_read (b, b->index->offset, b->index_data,
              b->index->length, err)) ||
      (st = bundle_section_crc (b, b->index, b->index_data, strict, err)))
    return st;
  b->ini_text[b->ini->length] = '\0';
  if (!b->index->crc_ok)
    return TT_OK;               /* inspection of a damaged index */
  return bundle_parse_index (b, err);
}

bool
tt_bundle_is_bundle (const char *path)
{
  unsigned char head[sizeof tt_bundle_magic];
  FILE *f = path ? fopen (path, "rb") : NULL;
  if (!f)
    return false;
  bool yes = fread (head, 1, sizeof head, f) == sizeof head &&
      !memcmp (head, tt_bundle_magic, sizeof head);
  fclose (f);
  return yes;
}
