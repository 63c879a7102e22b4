/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Model bundles (docs/bundle.md): one little-endian file
 *
 *   preamble  24 bytes: magic, format version, header length, header CRC32
 *   header    file size, alignment, batch size, weight flags, counters,
 *             tensor count, then the section table (type, flags, offset,
 *             length, uncompressed length, CRC32 of each section)
 *   ini       the model's INI text (with its plan when planned)
 *   index     one entry per tensor: offset in the weight section, bytes,
 *             kind, name
 *   weights   every tensor's floats at an offset that is a multiple of the
 *             alignment (also in the file), zero padding between; raw or
 *             zlib-compressed
 *
 * Nothing in a bundle is trusted: every offset and length is bounded by
 * the file before use, sections may not overlap, padding must be zero,
 * tensor offsets must be the canonical ones, and each section's CRC32 is
 * checked before its content is used (for the weights read from a file,
 * while they stream into the pool: a damaged file fails the load, and the
 * model being built is freed).
 */
#define ZLIB_CONST
#include "tt_internal.h"
#include "tt_le.h"
#include "tt_bundle.h"
#include "atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#error "bundle.c stores little-endian floats as they lie in memory"
#endif

static const unsigned char bundle_magic[8] = {
  0x89, 'T', 'T', 'B', '\r', '\n', 0x1a, '\n'
};

#define B_PREAMBLE 24
#define B_HEADER_FIXED 40
#define B_SECTION_ENTRY 40
#define B_SECTIONS 3
#define B_HEADER_BYTES (B_HEADER_FIXED + B_SECTIONS * B_SECTION_ENTRY)
#define B_INDEX_ENTRY 32
#define B_MAX_INI (64u << 20)
#define B_MAX_TENSORS (1u << 20)
#define B_MAX_NAME 159
#define B_MAX_RAW (1ull << 46)
#define B_WF_MOMENTS 1u
#define B_WF_COUNTERS 2u
#define B_CHUNK (1u << 20)

/* (little-endian fields: tt_le.h) */

static uint64_t
align_up (uint64_t x, uint64_t a)
{
  return (x + a - 1) & ~(a - 1);
}

static uint32_t
crc_of (uint32_t crc, const void *data, uint64_t len)
{
  const unsigned char *p = data;
  while (len > 0) {
    size_t n = len > (1u << 30) ? (1u << 30) : (size_t) len;
    crc = (uint32_t) crc32_z (crc, p, n);
    p += n;
    len -= n;
  }
  return crc;
}

/* ---- a parsed bundle ---------------------------------------------------- */

typedef struct
{
  uint32_t type, flags;
  uint64_t offset, length, raw_length;
  uint32_t crc;
  uint32_t crc_computed;
  bool crc_known, crc_ok;
} b_section;

typedef struct
{
  uint64_t offset, bytes;
  uint32_t kind;
  const char *name;             /* in the index data, not NUL-terminated */
  uint32_t name_len;
} b_tensor;

typedef struct
{
  const char *name;             /* for messages */
  /* the source: whole bundle in memory (a blob or a mapping), else fd */
  const unsigned char *mem;
  int fd;
  uint64_t size;
  void *map;                    /* our mapping, unmapped by bundle_close */
  size_t map_len;

  uint32_t version, header_len, header_crc;
  uint64_t file_size;
  uint32_t alignment, n_sections, flags, batch_size, wflags;
  uint32_t epoch, iteration, n_tensors;
  b_section sec[B_SECTIONS];
  b_section *ini, *index, *weights;

  char *ini_text;
  unsigned char *index_data;
  b_tensor *tensors;
  bool index_ok;
} bundle;

static const char *
section_name (uint32_t type)
{
  switch (type) {
    case TT_BUNDLE_SECTION_INI:
      return "ini";
    case TT_BUNDLE_SECTION_INDEX:
      return "index";
    case TT_BUNDLE_SECTION_WEIGHTS:
      return "weights";
  }
  return "unknown";
}

static void
bundle_close (bundle * b)
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
static tt_status
bundle_read (bundle * b, uint64_t off, void *dst, uint64_t len, tt_error * err)
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

static tt_status
bundle_open_file (bundle * b, const char *path, bool map, tt_error * err)
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

static void
bundle_open_memory (bundle * b, const void *data, size_t len, const char *name)
{
  memset (b, 0, sizeof *b);
  b->fd = -1;
  b->name = name ? name : "<memory>";
  b->mem = data;
  b->size = data ? len : 0;
}

/* ---- parsing: preamble, header, section table ------------------------- */

static tt_status
bundle_parse_header (bundle * b, tt_error * err)
{
  unsigned char pre[B_PREAMBLE];
  tt_status st;
  const char *n = b->name;
  if (b->size >= sizeof bundle_magic) {
    if ((st = bundle_read (b, 0, pre, sizeof bundle_magic, err)))
      return st;
    if (memcmp (pre, bundle_magic, sizeof bundle_magic) != 0)
      return tt_fail (err, TT_ERR_PARSE, "%s: not a tensor-trainer bundle: "
          "bad magic (%02x %02x %02x %02x %02x %02x %02x %02x, expected 89 "
          "54 54 42 0d 0a 1a 0a)", n, pre[0], pre[1], pre[2], pre[3], pre[4],
          pre[5], pre[6], pre[7]);
  }
  if (b->size < B_PREAMBLE)
    return tt_fail (err, TT_ERR_PARSE, "%s: truncated: %" PRIu64 " bytes, "
        "less than the %d-byte preamble of a bundle", n, b->size, B_PREAMBLE);
  if ((st = bundle_read (b, 0, pre, B_PREAMBLE, err)))
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
  if ((st = bundle_read (b, B_PREAMBLE, h, b->header_len, err)))
    return st;
  uint32_t crc = crc_of (0, h, b->header_len);
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
    const char *sn = section_name (s->type);
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
          section_name (order[i - 1]->type), order[i - 1]->offset, at,
          section_name (s->type), s->offset, s->offset + s->length);
    uint64_t gap = s->offset - at;
    if (gap >= max_gap)
      return tt_fail (err, TT_ERR_PARSE, "%s: %" PRIu64 " unused bytes "
          "before section %s (padding is less than %" PRIu64 ")", n, gap,
          section_name (s->type), max_gap);
    for (uint64_t k = 0; k < gap;) {
      unsigned char pad[512];
      uint64_t take = gap - k > sizeof pad ? sizeof pad : gap - k;
      if ((st = bundle_read (b, at + k, pad, take, err)))
        return st;
      for (uint64_t j = 0; j < take; j++)
        if (pad[j])
          return tt_fail (err, TT_ERR_PARSE, "%s: the padding before "
              "section %s (bytes %" PRIu64 "..%" PRIu64 ") is not zero", n,
              section_name (s->type), at, s->offset - 1);
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
  s->crc_computed = crc_of (0, data, s->length);
  s->crc_known = true;
  s->crc_ok = s->crc_computed == s->crc;
  if (!s->crc_ok && strict)
    return tt_fail (err, TT_ERR_PARSE, "%s: section %s: checksum mismatch "
        "(stored %08x, computed %08x): the bundle is damaged", b->name,
        section_name (s->type), s->crc, s->crc_computed);
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
    uint64_t want = align_up (end, b->alignment);
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
static tt_status
bundle_read_meta (bundle * b, bool strict, tt_error * err)
{
  tt_status st;
  if ((st = bundle_parse_header (b, err)))
    return st;
  b->ini_text = malloc (b->ini->length + 1);
  b->index_data = malloc (b->index->length + 1);
  if (!b->ini_text || !b->index_data)
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", b->name);
  if ((st = bundle_read (b, b->ini->offset, b->ini_text, b->ini->length,
              err)) ||
      (st = bundle_section_crc (b, b->ini, b->ini_text, strict, err)) ||
      (st = bundle_read (b, b->index->offset, b->index_data,
              b->index->length, err)) ||
      (st = bundle_section_crc (b, b->index, b->index_data, strict, err)))
    return st;
  b->ini_text[b->ini->length] = '\0';
  if (!b->index->crc_ok)
    return TT_OK;               /* inspection of a damaged index */
  return bundle_parse_index (b, err);
}

/* ---- the weight section as a stream of raw bytes ------------------------ */

typedef struct
{
  bundle *b;
  const b_section *s;
  uint64_t pos;                 /* stored bytes consumed */
  uint64_t raw_pos;             /* raw bytes produced */
  uint32_t crc;
  bool crc_on;                  /* checksum the stored bytes as they go */
  bool compressed, z_ready;
  z_stream z;
  unsigned char *in;            /* input buffer: compressed, from a file */
} w_stream;

static tt_status
stream_open (w_stream * w, bundle * b, bool crc_on, tt_error * err)
{
  memset (w, 0, sizeof *w);
  w->b = b;
  w->s = b->weights;
  w->crc_on = crc_on;
  w->compressed = (w->s->flags & TT_BUNDLE_SECTION_ZLIB) != 0;
  if (!w->compressed)
    return TT_OK;
  if (!b->mem && !(w->in = malloc (B_CHUNK)))
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", b->name);
  if (inflateInit (&w->z) != Z_OK) {
    free (w->in);
    w->in = NULL;
    return tt_fail (err, TT_ERR_NOMEM, "%s: cannot start zlib", b->name);
  }
  w->z_ready = true;
  return TT_OK;
}

static void
stream_close (w_stream * w)
{
  if (w->z_ready)
    inflateEnd (&w->z);
  free (w->in);
  w->z_ready = false;
  w->in = NULL;
}

/* More compressed input, when the last is used up. */
static tt_status
stream_feed (w_stream * w, tt_error * err)
{
  if (w->z.avail_in > 0 || w->pos == w->s->length)
    return TT_OK;
  uint64_t take = w->s->length - w->pos;
  if (take > B_CHUNK)
    take = B_CHUNK;
  const unsigned char *p;
  if (w->b->mem) {
    p = w->b->mem + w->s->offset + w->pos;
  } else {
    tt_status st = bundle_read (w->b, w->s->offset + w->pos, w->in, take,
        err);
    if (st)
      return st;
    p = w->in;
  }
  if (w->crc_on)
    w->crc = crc_of (w->crc, p, take);
  w->z.next_in = p;
  w->z.avail_in = (uInt) take;
  w->pos += take;
  return TT_OK;
}

static tt_status
stream_zerror (w_stream * w, int zr, tt_error * err)
{
  if ((zr == Z_BUF_ERROR || zr == Z_STREAM_END) &&
      (uint64_t) w->z.total_out < w->s->raw_length)
    return tt_fail (err, TT_ERR_PARSE, "%s: section weights: the compressed "
        "data ends after %" PRIu64 " of %" PRIu64 " bytes", w->b->name,
        (uint64_t) w->z.total_out, w->s->raw_length);
  if (zr == Z_BUF_ERROR)
    return tt_fail (err, TT_ERR_PARSE, "%s: section weights: the compressed "
        "data stops before its end marker and checksum", w->b->name);
  return tt_fail (err, TT_ERR_PARSE, "%s: section weights: zlib: %s",
      w->b->name, w->z.msg ? w->z.msg : zError (zr));
}

/* The next n raw bytes into dst. */
static tt_status
stream_read (w_stream * w, void *dst, uint64_t n, tt_error * err)
{
  tt_status st;
  if (n > w->s->raw_length - w->raw_pos)
    return tt_fail (err, TT_ERR_PARSE, "%s: section weights: read past its "
        "end", w->b->name);
  unsigned char *out = dst;
  /* in chunks, so each is checksummed while it is still in the cache */
  while (!w->compressed && n > 0) {
    uint64_t take = n > B_CHUNK ? B_CHUNK : n;
    if ((st = bundle_read (w->b, w->s->offset + w->raw_pos, out, take, err)))
      return st;
    if (w->crc_on)
      w->crc = crc_of (w->crc, out, take);
    w->raw_pos += take;
    w->pos += take;
    out += take;
    n -= take;
  }
  while (n > 0) {
    uInt chunk = n > (1u << 30) ? (1u << 30) : (uInt) n;
    w->z.next_out = out;
    w->z.avail_out = chunk;
    while (w->z.avail_out > 0) {
      if ((st = stream_feed (w, err)))
        return st;
      int zr = inflate (&w->z, Z_NO_FLUSH);
      if (zr == Z_STREAM_END && w->z.avail_out > 0)
        return stream_zerror (w, zr, err);
      if (zr == Z_BUF_ERROR && w->z.avail_in == 0 && w->pos == w->s->length)
        return stream_zerror (w, zr, err);
      if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR)
        return stream_zerror (w, zr, err);
    }
    out += chunk;
    n -= chunk;
    w->raw_pos += chunk;
  }
  return TT_OK;
}

/* Everything read: the stream ends exactly here and the checksum holds. */
static tt_status
stream_finish (w_stream * w, tt_error * err)
{
  tt_status st;
  if (w->compressed) {
    unsigned char extra;
    for (;;) {
      w->z.next_out = &extra;
      w->z.avail_out = 1;
      if ((st = stream_feed (w, err)))
        return st;
      int zr = inflate (&w->z, Z_NO_FLUSH);
      if (w->z.avail_out == 0)
        return tt_fail (err, TT_ERR_PARSE, "%s: section weights: the "
            "compressed data holds more than the %" PRIu64 " bytes of its "
            "tensors", w->b->name, w->s->raw_length);
      if (zr == Z_STREAM_END)
        break;
      if (zr != Z_OK)
        return stream_zerror (w, zr, err);
    }
    if (w->z.avail_in > 0 || w->pos != w->s->length)
      return tt_fail (err, TT_ERR_PARSE, "%s: section weights: %" PRIu64
          " bytes after the end of the compressed data", w->b->name,
          (uint64_t) w->z.avail_in + (w->s->length - w->pos));
  }
  if (w->crc_on && w->crc != w->s->crc)
    return tt_fail (err, TT_ERR_PARSE, "%s: section weights: checksum "
        "mismatch (stored %08x, computed %08x): the bundle is damaged",
        w->b->name, w->s->crc, w->crc);
  return TT_OK;
}

/* After a failure mid-stream: a damaged section reports as damaged, so
 * checksum the stored bytes not yet read and prefer that message. */
static tt_status
stream_fail (w_stream * w, tt_status st, tt_error * err)
{
  if (!w->crc_on || st == TT_ERR_NOMEM)
    return st;
  unsigned char *buf = malloc (B_CHUNK);
  if (!buf)
    return st;
  uint64_t at = w->compressed ? w->pos : w->raw_pos;
  uint32_t crc = w->crc;
  while (at < w->s->length) {
    uint64_t take = w->s->length - at > B_CHUNK ? B_CHUNK : w->s->length - at;
    if (bundle_read (w->b, w->s->offset + at, buf, take, NULL)) {
      free (buf);
      return st;
    }
    crc = crc_of (crc, buf, take);
    at += take;
  }
  free (buf);
  if (crc != w->s->crc)
    return tt_fail (err, TT_ERR_PARSE, "%s: section weights: checksum "
        "mismatch (stored %08x, computed %08x): the bundle is damaged",
        w->b->name, w->s->crc, crc);
  return st;
}

/* CRC of the stored weight section, reading it all. */
static tt_status
bundle_weights_crc (bundle * b, uint32_t * crc, tt_error * err)
{
  const b_section *s = b->weights;
  if (b->mem) {
    *crc = crc_of (0, b->mem + s->offset, s->length);
    return TT_OK;
  }
  unsigned char *buf = malloc (B_CHUNK);
  if (!buf)
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", b->name);
  uint32_t c = 0;
  for (uint64_t at = 0; at < s->length;) {
    uint64_t take = s->length - at > B_CHUNK ? B_CHUNK : s->length - at;
    tt_status st = bundle_read (b, s->offset + at, buf, take, err);
    if (st) {
      free (buf);
      return st;
    }
    c = crc_of (c, buf, take);
    at += take;
  }
  free (buf);
  *crc = c;
  return TT_OK;
}

static tt_status
bundle_verify_weights (bundle * b, tt_error * err)
{
  uint32_t crc;
  tt_status st = bundle_weights_crc (b, &crc, err);
  if (st)
    return st;
  b->weights->crc_computed = crc;
  b->weights->crc_known = true;
  b->weights->crc_ok = crc == b->weights->crc;
  if (!b->weights->crc_ok)
    return tt_fail (err, TT_ERR_PARSE, "%s: section weights: checksum "
        "mismatch (stored %08x, computed %08x): the bundle is damaged",
        b->name, b->weights->crc, crc);
  return TT_OK;
}

/* The zero padding between the tensors of an uncompressed weight section
 * in memory, which the copy loaders check as they stream it (bundle_fill):
 * in place, so that every loader accepts the same bundles. */
static tt_status
bundle_check_padding (bundle * b, tt_error * err)
{
  const unsigned char *base = b->mem + b->weights->offset;
  uint64_t end = 0;
  for (uint32_t i = 0; i < b->n_tensors; i++) {
    const b_tensor *t = &b->tensors[i];
    for (uint64_t k = end; k < t->offset; k++)
      if (base[k])
        return tt_fail (err, TT_ERR_PARSE, "%s: section weights: the "
            "padding before tensor %.*s is not zero", b->name,
            (int) t->name_len, t->name);
    end = t->offset + t->bytes;
  }
  return TT_OK;
}

/* ---- bundle against model ------------------------------------------------ */

/* The name of the model's BIN region r (ids from tt_bin_regions, nw of
 * them weights): its tensor's, or for a moment an inference-only model
 * does not keep, its weight's name with ":m" or ":v" (as a training model
 * names it). */
static void
bundle_region_name (const tt_model * m, const int *ids, uint32_t nw,
    const int *trainable, uint32_t r, char *out, size_t size)
{
  if (ids[r] >= 0) {
    snprintf (out, size, "%s", m->tensors[ids[r]].name);
    return;
  }
  const uint32_t j = r - nw;
  snprintf (out, size, "%s:%s", m->tensors[trainable[j / 2]].name,
      j % 2 ? "v" : "m");
}

typedef struct
{
  const char *name;
  uint32_t region;
} bundle_named;

static int
bundle_by_name (const void *a, const void *b)
{
  return strcmp (((const bundle_named *) a)->name,
      ((const bundle_named *) b)->name);
}

/* The model's BIN regions, which the bundle's index must list exactly:
 * ids_out[i] is the model tensor of the bundle's tensor i (-1 for a moment
 * an inference-only model skips). Matched by name, so that a bundle whose
 * tensors are in another order loads right: the bundles of engines before
 * nntrainer's BIN order (issue 16) list them in INI order. */
static tt_status
bundle_match (bundle * b, tt_model * m, int **ids_out, tt_error * err)
{
  const bool moments = (b->wflags & B_WF_MOMENTS) != 0;
  *ids_out = NULL;
  if (moments && !tt_bin_has_moments (m))
    return tt_fail (err, TT_ERR_INVALID, "%s: the bundle holds adam moments "
        "but the model's optimizer keeps none", b->name);
  uint32_t n, nw;
  int *ids = tt_bin_regions (m, moments, &n);
  int *wids = tt_bin_regions (m, false, &nw);
  int *trainable = malloc ((nw ? nw : 1) * sizeof *trainable);
  int *out = malloc ((n ? n : 1) * sizeof *out);
  bundle_named *named = calloc (n ? n : 1, sizeof *named);
  const size_t stride = B_MAX_NAME + 4;
  char *names = malloc ((n ? n : 1) * stride);
  bool *used = calloc (n ? n : 1, sizeof *used);
  tt_status st = TT_OK;
  if (!ids || !wids || !trainable || !out || !named || !names || !used) {
    st = tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", b->name);
    goto done;
  }
  if (n != b->n_tensors) {
    st = tt_fail (err, TT_ERR_INVALID, "%s: the bundle holds %u tensors, "
        "the model %s %u", b->name, b->n_tensors, m->path, n);
    goto done;
  }
  /* the trainable weights in BIN order, whose moments follow */
  uint32_t nt = 0;
  for (uint32_t i = 0; i < nw; i++)
    for (uint32_t c = 0; c < m->n_layers; c++)
      for (uint32_t k = 0; k < m->layers[c].n_weights; k++)
        if (m->layers[c].weights[k].value == wids[i] &&
            m->layers[c].weights[k].trainable)
          trainable[nt++] = wids[i];
  for (uint32_t r = 0; r < n; r++) {
    named[r].name = names + r * stride;
    named[r].region = r;
    bundle_region_name (m, ids, nw, trainable, r, (char *) named[r].name,
        stride);
  }
  qsort (named, n, sizeof *named, bundle_by_name);
  for (uint32_t i = 0; i < n && !st; i++) {
    const b_tensor *t = &b->tensors[i];
    char key[B_MAX_NAME + 1];
    snprintf (key, sizeof key, "%.*s", (int) t->name_len, t->name);
    const bundle_named probe = { key, 0 };
    const bundle_named *hit = bsearch (&probe, named, n, sizeof *named,
        bundle_by_name);
    if (!hit) {
      char want[B_MAX_NAME + 4];
      bundle_region_name (m, ids, nw, trainable, i, want, sizeof want);
      st = tt_fail (err, TT_ERR_INVALID, "%s: tensor %u is %s (%" PRIu64
          " bytes) in the bundle but the model %s has no tensor of that "
          "name (its tensor %u is %s)", b->name, i, key, t->bytes, m->path,
          i, want);
      break;
    }
    const uint32_t r = hit->region;
    const uint32_t kind = r < nw ? 0 : 1 + (r - nw) % 2;
    const uint64_t bytes = ids[r] >= 0 ?
        (uint64_t) m->tensors[ids[r]].count * sizeof (float) :
        (uint64_t) m->tensors[trainable[(r - nw) / 2]].count * sizeof (float);
    if (used[r])
      st = tt_fail (err, TT_ERR_INVALID, "%s: tensor %s is listed twice in "
          "the bundle", b->name, key);
    else if (t->bytes != bytes || t->kind != kind)
      st = tt_fail (err, TT_ERR_INVALID, "%s: tensor %u is %s (%" PRIu64
          " bytes, kind %u) in the bundle but %s (%" PRIu64 " bytes, kind "
          "%u) in the model", b->name, i, key, t->bytes, t->kind, key, bytes,
          kind);
    used[r] = true;
    out[i] = ids[r];
  }
done:
  free (ids);
  free (wids);
  free (trainable);
  free (named);
  free (names);
  free (used);
  if (st) {
    free (out);
    return st;
  }
  *ids_out = out;
  return TT_OK;
}

/* value (the element at index of data) cannot be held: the message
 * names the bundle, the tensor and the element (at) */
static tt_status
bundle_state_fail (bundle * b, const b_tensor * t, const void *data,
    size_t index, size_t at, tt_error * err)
{
  const unsigned char *p = (const unsigned char *) data + index * 4;
  float v;
  memcpy (&v, p, 4);
  return tt_fail (err, TT_ERR_PARSE, "%s: tensor %.*s holds %s (%g) at "
      "element %zu", b->name, (int) t->name_len, t->name,
      tt_state_why (t->kind, p), (double) v, at);
}

/* Streams the weight section: with store, every tensor straight into its
 * place in the pool; without, into a scratch buffer to check it. */
static tt_status
bundle_fill (bundle * b, tt_model * m, const int *ids, bool store,
    bool crc_on, tt_error * err)
{
  w_stream w;
  tt_status st = stream_open (&w, b, crc_on, err);
  if (st)
    return st;
  unsigned char *scratch = malloc (B_CHUNK);
  if (!scratch) {
    stream_close (&w);
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", b->name);
  }
  int bad_tensor = -1;
  size_t bad_at = 0;
  unsigned char bad_value[4] = { 0 };
  for (uint32_t i = 0; i < b->n_tensors && !st; i++) {
    const b_tensor *t = &b->tensors[i];
    uint64_t pad = t->offset - w.raw_pos;
    if ((st = stream_read (&w, scratch, pad, err)))
      break;
    for (uint64_t k = 0; k < pad; k++)
      if (scratch[k]) {
        st = tt_fail (err, TT_ERR_PARSE, "%s: section weights: the padding "
            "before tensor %.*s is not zero", b->name, (int) t->name_len,
            t->name);
        break;
      }
    if (st)
      break;
    if (store && ids[i] >= 0) {
      st = stream_read (&w, m->tensors[ids[i]].data, t->bytes, err);
      continue;
    }
    for (uint64_t done = 0; done < t->bytes && !st;) {
      uint64_t take = t->bytes - done > B_CHUNK ? B_CHUNK : t->bytes - done;
      if ((st = stream_read (&w, scratch, take, err)))
        break;
      /* moments an inference-only model skips are checked too: both kinds
       * of model accept the same bundles */
      const size_t at = bad_tensor < 0 ? tt_state_find_bad (t->kind,
          scratch, (size_t) take / 4) : (size_t) take / 4;
      if (at < take / 4) {
        bad_tensor = (int) i;
        bad_at = (size_t) (done / 4) + at;
        memcpy (bad_value, scratch + at * 4, 4);
      }
      done += take;
    }
  }
  if (!st)
    st = stream_finish (&w, err);
  /* a damaged section reports as damaged, whichever check saw it first */
  if (st)
    st = stream_fail (&w, st, err);
  stream_close (&w);
  free (scratch);
  if (!st && bad_tensor >= 0)
    st = bundle_state_fail (b, &b->tensors[bad_tensor], bad_value, 0, bad_at,
        err);
  return st;
}

static tt_status
bundle_check_finite (bundle * b, tt_model * m, const int *ids, tt_error * err)
{
  for (uint32_t i = 0; i < b->n_tensors; i++) {
    const b_tensor *bt = &b->tensors[i];
    const unsigned char *data;
    size_t n;
    if (ids[i] < 0) {
      /* moments an inference-only model skips: copied loaders checked
       * them while streaming; used in place, they lie in the blob */
      data = b->mem && !(b->weights->flags & TT_BUNDLE_SECTION_ZLIB) ?
          b->mem + b->weights->offset + bt->offset : NULL;
      n = (size_t) (bt->bytes / 4);
    } else {
      data = (const unsigned char *) m->tensors[ids[i]].data;
      n = m->tensors[ids[i]].count;
    }
    if (!data)
      continue;
    const size_t bad = tt_state_find_bad (bt->kind, data, n);
    if (bad < n)
      return bundle_state_fail (b, bt, data, bad, bad, err);
  }
  return TT_OK;
}

/* Points every listed tensor (and its views) into the mapped section. */
static tt_status
bundle_bind_in_place (bundle * b, tt_model * m, const int *ids, tt_error * err)
{
  const unsigned char *base = b->mem + b->weights->offset;
  const uint64_t need = b->alignment < 64 ? b->alignment : 64;
  if ((uintptr_t) b->mem % need)
    return tt_fail (err, TT_ERR_INVALID, "%s: the blob at %p is not aligned "
        "to %" PRIu64 " bytes, which using its weights in place needs "
        "(export it with --align %" PRIu64 ", or load it with a copy mode)",
        b->name, (const void *) b->mem, need, need);
  int *slot = malloc ((m->n_tensors ? m->n_tensors : 1) * sizeof *slot);
  if (!slot)
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", b->name);
  for (uint32_t k = 0; k < m->n_tensors; k++)
    slot[k] = -1;
  for (uint32_t i = 0; i < b->n_tensors; i++)
    if (ids[i] >= 0)
      slot[ids[i]] = (int) i;
  for (uint32_t k = 0; k < m->n_tensors; k++) {
    int r = (int) k;
    while (m->tensors[r].alias_of >= 0)
      r = m->tensors[r].alias_of;
    if (slot[r] >= 0)
      m->tensors[k].data = (float *) (uintptr_t) (base +
          b->tensors[slot[r]].offset);
  }
  free (slot);
  return TT_OK;
}

static tt_status
bundle_check_counters (bundle * b, tt_error * err)
{
  if (!(b->wflags & B_WF_COUNTERS))
    return TT_OK;
  return tt_state_check_counters (b->epoch, b->iteration, b->name, err);
}

static tt_model *
bundle_model (bundle * b, const tt_bundle_load_options * o, tt_error * err)
{
  static const tt_bundle_load_options defaults = { 0 };
  if (!o)
    o = &defaults;
  tt_status st = bundle_read_meta (b, true, err);
  if (st || bundle_check_counters (b, err))
    return NULL;
  const bool in_place = o->mode == TT_BUNDLE_IN_PLACE;
  if (o->mode != TT_BUNDLE_READ && o->mode != TT_BUNDLE_MMAP && !in_place) {
    tt_fail (err, TT_ERR_INVALID, "%s: unknown load mode %d", b->name,
        (int) o->mode);
    return NULL;
  }
  if (in_place && (b->weights->flags & TT_BUNDLE_SECTION_ZLIB)) {
    tt_fail (err, TT_ERR_INVALID, "%s: the weight section is "
        "zlib-compressed, so it cannot be used in place; load it with "
        "TT_BUNDLE_READ or TT_BUNDLE_MMAP (--mode read or mmap)", b->name);
    return NULL;
  }
  /* used in place, the weights are checked before anything else; copied,
   * their checksum is computed as they stream into the pool */
  if (in_place && !o->trust && (bundle_verify_weights (b, err) ||
          bundle_check_padding (b, err)))
    return NULL;
  tt_model *m = tt_model_load_ini_text (b->ini_text, b->ini->length, b->name,
      err);
  if (!m)
    return NULL;
  int *ids = NULL;
  const uint32_t batch = o->batch_size ? o->batch_size : b->batch_size;
  if (batch && (st = tt_model_set_batch_size (m, batch, err)))
    goto fail;
  if (o->has_seed)
    tt_model_set_seed (m, o->seed);
  if ((st = tt_model_set_plan_mode (m, o->plan_mode, err)) ||
      (st = tt_model_set_inference (m, o->inference, err)))
    goto fail;
  m->defer_init = true;
  if (in_place) {
    m->weights_external = true;
    m->moments_missing = !(b->wflags & B_WF_MOMENTS);
  }
  if ((st = tt_model_compile (m, err)) || (st = bundle_match (b, m, &ids, err)))
    goto fail;
  if (in_place) {
    if ((st = bundle_bind_in_place (b, m, ids, err)))
      goto fail;
  } else if ((st = bundle_fill (b, m, ids, true, !o->trust, err))) {
    goto fail;
  }
  if (!o->trust && (st = bundle_check_finite (b, m, ids, err)))
    goto fail;
  if (b->wflags & B_WF_COUNTERS) {
    m->epoch = b->epoch;
    m->iteration = b->iteration;
  }
  if (in_place && b->map) {
    m->map = b->map;
    m->map_len = b->map_len;
    b->map = NULL;
  }
  free (ids);
  return m;
fail:
  free (ids);
  tt_model_free (m);
  return NULL;
}

tt_model *
tt_bundle_load (const char *path, const tt_bundle_load_options * o,
    tt_error * err)
{
  bundle b;
  const bool map = o && (o->mode == TT_BUNDLE_MMAP ||
      o->mode == TT_BUNDLE_IN_PLACE);
  tt_model *m = NULL;
  if (bundle_open_file (&b, path, map, err) == TT_OK) {
    if (b.map)
      madvise (b.map, b.map_len, o->mode == TT_BUNDLE_MMAP ?
          MADV_SEQUENTIAL : MADV_NORMAL);
    else if (!map)
      posix_fadvise (b.fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    else
      bundle_parse_header (&b, err);    /* too short to map: say so */
    if (!map || b.map)
      m = bundle_model (&b, o, err);
  }
  bundle_close (&b);
  return m;
}

tt_model *
tt_bundle_load_memory (const void *data, size_t len, const char *name,
    const tt_bundle_load_options * o, tt_error * err)
{
  bundle b;
  if (!data) {
    tt_fail (err, TT_ERR_INVALID, "%s: no data", name ? name : "<memory>");
    return NULL;
  }
  bundle_open_memory (&b, data, len, name);
  tt_model *m = bundle_model (&b, o, err);
  bundle_close (&b);
  return m;
}

tt_status
tt_bundle_load_weights (tt_model * m, const char *path, tt_error * err)
{
  if (!m->compiled)
    return tt_fail (err, TT_ERR_STATE, "%s: compile the model before loading "
        "weights", path);
  if (m->weights_external)
    return tt_model_refuse_external (m, "load weights", err);
  bundle b;
  int *ids = NULL;
  tt_status st;
  if (!(st = bundle_open_file (&b, path, false, err)) &&
      !(st = bundle_read_meta (&b, true, err)) &&
      !(st = bundle_check_counters (&b, err)) &&
      !(st = bundle_match (&b, m, &ids, err)) &&
      /* check everything, then store: a bad bundle leaves the model as it
       * was */
      !(st = bundle_fill (&b, m, ids, false, true, err)) &&
      !(st = bundle_fill (&b, m, ids, true, false, err))) {
    if (tt_bin_has_moments (m) && !(b.wflags & B_WF_MOMENTS)) {
      uint32_t n;
      int *all = tt_bin_regions (m, true, &n);
      uint32_t w = b.n_tensors;
      for (uint32_t i = w; all && i < n; i++)
        if (all[i] >= 0)
          memset (m->tensors[all[i]].data, 0,
              m->tensors[all[i]].count * sizeof (float));
      free (all);
    }
    if (b.wflags & B_WF_COUNTERS) {
      m->epoch = b.epoch;
      m->iteration = b.iteration;
    }
  }
  free (ids);
  bundle_close (&b);
  return st;
}

bool
tt_bundle_is_bundle (const char *path)
{
  unsigned char head[sizeof bundle_magic];
  FILE *f = path ? fopen (path, "rb") : NULL;
  if (!f)
    return false;
  bool yes = fread (head, 1, sizeof head, f) == sizeof head &&
      !memcmp (head, bundle_magic, sizeof head);
  fclose (f);
  return yes;
}

/* ---- writing ----------------------------------------------------------- */

static const unsigned char zeros[4096];

typedef struct
{
  tt_atomic_file *f;
  bool compress, z_ready;
  z_stream z;
  unsigned char *out;
  uint32_t crc;
  uint64_t stored;
  tt_error *err;
} w_writer;

static tt_status
writer_emit (w_writer * w, const void *data, size_t len)
{
  w->crc = crc_of (w->crc, data, len);
  w->stored += len;
  return tt_atomic_file_write (w->f, data, len, w->err);
}

static tt_status
writer_deflate (w_writer * w, int flush)
{
  int zr;
  do {
    w->z.next_out = w->out;
    w->z.avail_out = B_CHUNK;
    zr = deflate (&w->z, flush);
    if (zr == Z_STREAM_ERROR)
      return tt_fail (w->err, TT_ERR_IO, "%s: zlib failed", w->f->path);
    size_t have = B_CHUNK - w->z.avail_out;
    tt_status st = have ? writer_emit (w, w->out, have) : TT_OK;
    if (st)
      return st;
  } while (w->z.avail_out == 0 || (flush == Z_FINISH && zr != Z_STREAM_END));
  return TT_OK;
}

static tt_status
writer_put (w_writer * w, const void *data, uint64_t len)
{
  const unsigned char *p = data;
  while (len > 0) {
    size_t n = len > (1u << 30) ? (1u << 30) : (size_t) len;
    tt_status st;
    if (!w->compress) {
      st = writer_emit (w, p, n);
    } else {
      w->z.next_in = p;
      w->z.avail_in = (uInt) n;
      st = writer_deflate (w, Z_NO_FLUSH);
    }
    if (st)
      return st;
    p += n;
    len -= n;
  }
  return TT_OK;
}

static tt_status
writer_zeros (w_writer * w, uint64_t len)
{
  while (len > 0) {
    uint64_t n = len > sizeof zeros ? sizeof zeros : len;
    tt_status st = writer_put (w, zeros, n);
    if (st)
      return st;
    len -= n;
  }
  return TT_OK;
}

static tt_status
file_zeros (tt_atomic_file * f, uint64_t len, tt_error * err)
{
  while (len > 0) {
    uint64_t n = len > sizeof zeros ? sizeof zeros : len;
    tt_status st = tt_atomic_file_write (f, zeros, n, err);
    if (st)
      return st;
    len -= n;
  }
  return TT_OK;
}

static tt_status
bundle_check_options (const tt_bundle_options * o, const char *path,
    uint32_t * align, tt_error * err)
{
  *align = o && o->alignment ? o->alignment : TT_BUNDLE_DEFAULT_ALIGNMENT;
  if (*align < 4 || *align > TT_BUNDLE_MAX_ALIGNMENT || (*align & (*align - 1)))
    return tt_fail (err, TT_ERR_INVALID, "%s: alignment %u is not a power of "
        "two in [4, %d]", path, *align, TT_BUNDLE_MAX_ALIGNMENT);
  if (o && (o->level < 0 || o->level > 9))
    return tt_fail (err, TT_ERR_INVALID, "%s: zlib level %d is not in "
        "[1, 9] (0: the default)", path, o->level);
  return TT_OK;
}

/* Writes text and the model's BIN regions (moments when asked) as a
 * bundle; counters when asked. */
static tt_status
bundle_write (tt_model * m, const char *path, const char *text,
    size_t text_len, bool moments, bool counters,
    const tt_bundle_options * o, tt_error * err)
{
  uint32_t align;
  tt_status st = bundle_check_options (o, path, &align, err);
  if (st)
    return st;
  if (text_len > B_MAX_INI)
    return tt_fail (err, TT_ERR_INVALID, "%s: the INI text (%zu bytes) is "
        "more than %u MiB", path, text_len, B_MAX_INI >> 20);
  const bool compress = o && o->compress;
  uint32_t n;
  int *ids = tt_bin_regions (m, moments, &n);
  if (!ids)
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", path);

  /* the index: entries, then the names */
  size_t names_len = 0;
  for (uint32_t i = 0; i < n; i++)
    names_len += strlen (m->tensors[ids[i]].name);
  const size_t index_len = (size_t) n * B_INDEX_ENTRY + names_len;
  unsigned char *index = calloc (index_len + 1, 1);
  if (!index) {
    free (ids);
    return tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", path);
  }
  uint64_t raw = 0;
  size_t name_at = 0;
  uint32_t weights = 0;
  {
    uint32_t nw;
    int *w = tt_bin_regions (m, false, &nw);
    weights = nw;
    free (w);
  }
  for (uint32_t i = 0; i < n; i++) {
    const tt_tensor *t = &m->tensors[ids[i]];
    unsigned char *e = index + (size_t) i * B_INDEX_ENTRY;
    const size_t nl = strlen (t->name);
    raw = align_up (raw, align);
    tt_le_put64 (e, raw);
    tt_le_put64 (e + 8, (uint64_t) t->count * sizeof (float));
    tt_le_put32 (e + 16, (uint32_t) name_at);
    tt_le_put32 (e + 20, (uint32_t) nl);
    tt_le_put32 (e + 24, i < weights ? 0 : 1 + (i - weights) % 2);
    memcpy (index + (size_t) n * B_INDEX_ENTRY + name_at, t->name, nl);
    name_at += nl;
    raw += (uint64_t) t->count * sizeof (float);
  }

  const uint64_t ini_off = B_PREAMBLE + B_HEADER_BYTES;
  const uint64_t index_off = align_up (ini_off + text_len, 8);
  const uint64_t weights_off = align_up (index_off + index_len, align);

  tt_atomic_file f;
  w_writer w = { &f, compress, false, {0}, NULL, 0, 0, err };
  if ((st = tt_atomic_file_open (&f, path, err))) {
    free (index);
    free (ids);
    return st;
  }
  if (compress) {
    w.out = malloc (B_CHUNK);
    if (!w.out || deflateInit (&w.z, o->level ? o->level :
            Z_DEFAULT_COMPRESSION) != Z_OK) {
      st = tt_fail (err, TT_ERR_NOMEM, "%s: cannot start zlib", path);
      goto out;
    }
    w.z_ready = true;
  }
  /* header last, once the weight section's length and checksum are known */
  if ((st = file_zeros (&f, ini_off, err)) ||
      (st = tt_atomic_file_write (&f, text, text_len, err)) ||
      (st = file_zeros (&f, index_off - (ini_off + text_len), err)) ||
      (st = tt_atomic_file_write (&f, index, index_len, err)) ||
      (st = file_zeros (&f, weights_off - (index_off + index_len), err)))
    goto out;
  uint64_t at = 0;
  for (uint32_t i = 0; i < n && !st; i++) {
    const tt_tensor *t = &m->tensors[ids[i]];
    const uint64_t bytes = (uint64_t) t->count * sizeof (float);
    if (!(st = writer_zeros (&w, align_up (at, align) - at)))
      st = writer_put (&w, t->data, bytes);
    at = align_up (at, align) + bytes;
  }
  if (!st && compress)
    st = writer_deflate (&w, Z_FINISH);
  if (st)
    goto out;

  unsigned char h[B_PREAMBLE + B_HEADER_BYTES];
  memset (h, 0, sizeof h);
  unsigned char *hd = h + B_PREAMBLE;
  tt_le_put64 (hd, weights_off + w.stored);
  tt_le_put32 (hd + 8, align);
  tt_le_put32 (hd + 12, B_SECTIONS);
  tt_le_put32 (hd + 20, m->batch_size);
  tt_le_put32 (hd + 24, (moments ? B_WF_MOMENTS : 0) |
      (counters ? B_WF_COUNTERS : 0));
  tt_le_put32 (hd + 28, counters ? m->epoch : 0);
  tt_le_put32 (hd + 32, counters ? m->iteration : 0);
  tt_le_put32 (hd + 36, n);
  const struct
  {
    uint32_t type, flags;
    uint64_t offset, length, raw;
    uint32_t crc;
  } table[B_SECTIONS] = {
    {TT_BUNDLE_SECTION_INI, 0, ini_off, text_len, text_len,
        crc_of (0, text, text_len)},
    {TT_BUNDLE_SECTION_INDEX, 0, index_off, index_len, index_len,
        crc_of (0, index, index_len)},
    {TT_BUNDLE_SECTION_WEIGHTS, compress ? TT_BUNDLE_SECTION_ZLIB : 0,
        weights_off, w.stored, raw, w.crc},
  };
  for (int i = 0; i < B_SECTIONS; i++) {
    unsigned char *e = hd + B_HEADER_FIXED + i * B_SECTION_ENTRY;
    tt_le_put32 (e, table[i].type);
    tt_le_put32 (e + 4, table[i].flags);
    tt_le_put64 (e + 8, table[i].offset);
    tt_le_put64 (e + 16, table[i].length);
    tt_le_put64 (e + 24, table[i].raw);
    tt_le_put32 (e + 32, table[i].crc);
  }
  memcpy (h, bundle_magic, sizeof bundle_magic);
  tt_le_put32 (h + 8, TT_BUNDLE_VERSION);
  tt_le_put32 (h + 12, B_HEADER_BYTES);
  tt_le_put32 (h + 16, crc_of (0, hd, B_HEADER_BYTES));
  st = tt_atomic_file_pwrite (&f, 0, h, sizeof h, err);
out:
  if (w.z_ready)
    deflateEnd (&w.z);
  free (w.out);
  free (index);
  free (ids);
  if (st) {
    tt_atomic_file_abort (&f);
    return st;
  }
  return tt_atomic_file_commit (&f, err);
}

tt_status
tt_bundle_save (tt_model * m, const char *path, const tt_bundle_options * o,
    tt_error * err)
{
  if (!m->compiled)
    return tt_fail (err, TT_ERR_STATE, "%s: nothing to save: the model is "
        "not compiled", path);
  char *text = NULL;
  size_t len = 0;
  tt_status st = tt_state_check_saveable (m, path, err);
  if (st)
    return st;
  if (m->plan_mode != TT_PLAN_NAIVE &&
      (st = tt_plan_ini_text (m, &text, &len, err)))
    return st;
  st = bundle_write (m, path, text ? text : m->ini_text,
      text ? len : m->ini_len, tt_bin_saves_moments (m), true, o, err);
  free (text);
  return st;
}

tt_status
tt_model_save (tt_model * m, const char *path, tt_error * err)
{
  if (!path)
    return tt_fail (err, TT_ERR_INVALID, "no path to save to");
  const char *slash = strrchr (path, '/');
  const char *dot = strrchr (slash ? slash + 1 : path, '.');
  if (dot && !strcasecmp (dot, ".bin"))
    return tt_model_save_bin (m, path, err);
  if (dot && !strcasecmp (dot, ".ini"))
    return tt_fail (err, TT_ERR_INVALID, "%s: a model saves as a bundle "
        "(.ttb, .bundle) or as BIN weights (.bin); the INI is its "
        "description (tt_model_save_plan_ini writes it with its plan)", path);
  return tt_bundle_save (m, path, NULL, err);
}

tt_status
tt_bundle_pack (const char *ini_path, const char *bin_path,
    const char *bundle_path, uint32_t batch_size,
    const tt_bundle_options * o, tt_error * err)
{
  uint32_t align;
  tt_status st = bundle_check_options (o, bundle_path, &align, err);
  if (st)
    return st;
  tt_model *m = tt_model_load_ini (ini_path, err);
  if (!m)
    return err ? err->status : TT_ERR_INVALID;
  bool moments = false, counters = false;
  struct stat sb;
  m->defer_init = true;
  if ((batch_size && (st = tt_model_set_batch_size (m, batch_size, err))) ||
      (st = tt_model_compile (m, err)))
    goto out;
  if (stat (bin_path, &sb) != 0) {
    st = tt_fail (err, TT_ERR_IO, "%s: cannot open: %s", bin_path,
        strerror (errno));
    goto out;
  }
  if ((st = tt_bin_layout (m, (size_t) sb.st_size, bin_path, &moments,
              &counters, err)) || (st = tt_model_load_bin (m, bin_path, err)))
    goto out;
  st = bundle_write (m, bundle_path, m->ini_text, m->ini_len, moments,
      counters, o, err);
out:
  tt_model_free (m);
  return st;
}

/* Where each tensor of the model's BIN lies in the bundle's index:
 * perm[r] = the bundle tensor of BIN region r. Learnt from the bundle's
 * INI (its graph only: no pool); false when that cannot be built or its
 * names do not match (then the bundle loads nowhere, and the index order
 * is all there is). Bundles written before nntrainer's BIN order (issue
 * 16) list the tensors in INI order: unpacked in the model's order, their
 * BIN loads right. */
static bool
bundle_bin_order (bundle * b, uint32_t * perm)
{
  tt_error err;
  tt_model *m = tt_model_load_ini_text (b->ini_text, b->ini->length, b->name,
      &err);
  uint32_t n = 0;
  char **names = NULL;
  bool ok = m && (!b->batch_size ||
      tt_model_set_batch_size (m, b->batch_size, &err) == TT_OK) &&
      tt_graph_build (m, &err) == TT_OK &&
      (names = tt_bin_region_names (m, (b->wflags & B_WF_MOMENTS) != 0,
          &n)) && n == b->n_tensors;
  for (uint32_t r = 0; ok && r < n; r++) {
    const size_t len = strlen (names[r]);
    bool found = false;
    /* the same position first: bundles in the BIN's order cost n steps */
    for (uint32_t k = 0; k < n && !found; k++) {
      const uint32_t i = (r + k) % n;
      if (b->tensors[i].name_len == len &&
          !memcmp (b->tensors[i].name, names[r], len)) {
        perm[r] = i;
        found = true;
      }
    }
    ok = found;
  }
  free (names);
  tt_model_free (m);
  return ok;
}

tt_status
tt_bundle_unpack (const char *bundle_path, const char *ini_path,
    const char *bin_path, tt_error * err)
{
  bundle b;
  tt_status st;
  tt_atomic_file fb;
  bool fb_open = false;
  w_stream w;
  bool w_open = false;
  unsigned char *buf = NULL, *whole = NULL;
  uint32_t *perm = NULL;
  if ((st = bundle_open_file (&b, bundle_path, false, err)) ||
      (st = bundle_read_meta (&b, true, err)))
    goto out;
  if (bin_path) {
    if (!(buf = malloc (B_CHUNK))) {
      st = tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", bundle_path);
      goto out;
    }
    if ((st = tt_atomic_file_open (&fb, bin_path, err)))
      goto out;
    fb_open = true;
  }
  /* always stream the weights: their checksum is checked either way */
  if ((st = stream_open (&w, &b, true, err)))
    goto out;
  w_open = true;
  if (!buf && !(buf = malloc (B_CHUNK))) {
    st = tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", bundle_path);
    goto out;
  }
  /* the model's BIN order, when the bundle lists its tensors otherwise
   * (then the section is read whole, and written in that order) */
  if (fb_open && b.n_tensors) {
    perm = malloc (b.n_tensors * sizeof *perm);
    if (!perm) {
      st = tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", bundle_path);
      goto out;
    }
    bool other = false;
    if (bundle_bin_order (&b, perm))
      for (uint32_t r = 0; r < b.n_tensors; r++)
        other |= perm[r] != r;
    if (other) {
      const uint64_t raw = b.weights->raw_length;
      if (raw > SIZE_MAX - 1 || !(whole = malloc ((size_t) raw + 1))) {
        st = tt_fail (err, TT_ERR_NOMEM, "%s: out of memory", bundle_path);
        goto out;
      }
      if ((st = stream_read (&w, whole, raw, err)))
        goto out;
    }
  }
  bool tag = false;
  for (uint32_t k = 0; whole && k <= b.n_tensors && !st; k++) {
    const b_tensor *t = k < b.n_tensors ? &b.tensors[perm[k]] : NULL;
    if ((b.wflags & B_WF_MOMENTS) && !tag && (!t || t->kind != 0)) {
      tag = true;
      st = tt_atomic_file_write (&fb, "adam", 4, err);
    }
    if (t && !st)
      st = tt_atomic_file_write (&fb, whole + t->offset, t->bytes, err);
  }
  for (uint32_t i = 0; !whole && i <= b.n_tensors && !st; i++) {
    if ((b.wflags & B_WF_MOMENTS) && !tag && (i == b.n_tensors ||
            b.tensors[i].kind != 0)) {
      tag = true;
      if (fb_open && (st = tt_atomic_file_write (&fb, "adam", 4, err)))
        break;
    }
    if (i == b.n_tensors)
      break;
    const b_tensor *t = &b.tensors[i];
    if ((st = stream_read (&w, buf, t->offset - w.raw_pos, err)))
      break;
    for (uint64_t done = 0; done < t->bytes && !st;) {
      uint64_t take = t->bytes - done > B_CHUNK ? B_CHUNK : t->bytes - done;
      if (!(st = stream_read (&w, buf, take, err)) && fb_open)
        st = tt_atomic_file_write (&fb, buf, take, err);
      done += take;
    }
  }
  if (!st)
    st = stream_finish (&w, err);
  /* a damaged section reports as damaged, whichever check saw it first */
  if (st)
    st = stream_fail (&w, st, err);
  if (!st && fb_open && (b.wflags & B_WF_COUNTERS)) {
    unsigned char c[8];
    tt_le_put32 (c, b.epoch);
    tt_le_put32 (c + 4, b.iteration);
    st = tt_atomic_file_write (&fb, c, sizeof c, err);
  }
  if (!st && ini_path) {
    tt_atomic_file fi;
    if (!(st = tt_atomic_file_open (&fi, ini_path, err))) {
      if ((st = tt_atomic_file_write (&fi, b.ini_text, b.ini->length, err)))
        tt_atomic_file_abort (&fi);
      else
        st = tt_atomic_file_commit (&fi, err);
    }
  }
  if (fb_open && !st) {
    fb_open = false;
    st = tt_atomic_file_commit (&fb, err);
  }
out:
  if (fb_open)
    tt_atomic_file_abort (&fb);
  if (w_open)
    stream_close (&w);
  free (buf);
  free (whole);
  free (perm);
  bundle_close (&b);
  return st;
}

/* ---- inspection -------------------------------------------------------- */

static tt_status
bundle_inspect (bundle * b, tt_bundle_info * info, tt_error * err)
{
  memset (info, 0, sizeof *info);
  tt_status st = bundle_read_meta (b, false, err);
  if (st)
    return st;
  uint32_t crc;
  if ((st = bundle_weights_crc (b, &crc, err)))
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
    o->name = section_name (s->type);
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
  tt_status st = bundle_open_file (&b, path, false, err);
  if (!st)
    st = bundle_inspect (&b, info, err);
  bundle_close (&b);
  return st;
}

tt_status
tt_bundle_inspect_memory (const void *data, size_t len, const char *name,
    tt_bundle_info * info, tt_error * err)
{
  bundle b;
  bundle_open_memory (&b, data, len, name);
  tt_status st = bundle_inspect (&b, info, err);
  bundle_close (&b);
  return st;
}

void
tt_bundle_info_clear (tt_bundle_info * info)
{
  free (info->tensors);
  memset (info, 0, sizeof *info);
}
