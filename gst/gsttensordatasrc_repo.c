/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor_datasrc's datarepo files (nnstreamer's MLOps data repository):
 * the JSON of a data file found, read (gsttensordatarepo.c parses it)
 * and the data file checked against it, the start from them, and a
 * sample of flexible tensors read into its buffer.
 */
#include "gsttensordatasrc_private.h"
#include "gsttensordatarepo.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>

/* The JSON of a datarepo location: json if set, else for a .data, .dat or
 * .raw file the .json beside it when it exists; NULL: an IDX file. */
gchar *
gst_tensor_datasrc_repo_json (const gchar * location, const gchar * json)
{
  static const gchar *exts[] = { ".data", ".dat", ".raw" };
  if (json && *json)
    return g_strdup (json);
  if (!location)
    return NULL;
  for (guint i = 0; i < G_N_ELEMENTS (exts); i++) {
    gsize n = strlen (location), e = strlen (exts[i]);
    if (n > e && g_ascii_strcasecmp (location + n - e, exts[i]) == 0) {
      gchar *stem = g_strndup (location, n - e);
      gchar *path = g_strconcat (stem, ".json", NULL);
      g_free (stem);
      if (g_file_test (path, G_FILE_TEST_IS_REGULAR))
        return path;
      g_free (path);
    }
  }
  return NULL;
}

/* A flexible datarepo file against its JSON: the file ends where the
 * last sample does, and every tensor's header is one nnstreamer writes
 * and describes as many bytes as tensor_size says. FALSE after posting an
 * error naming the file, the sample and the tensor. */
static gboolean
gst_tensor_datasrc_check_flexible (GstTtTensorDataSrc * self,
    const gchar * data, const gchar * json, const GstTensorDataRepoInfo * info,
    const GstTtTensorDataSrcRepo * repo, gsize length)
{
  guint8 header[GST_TENSOR_META_HEADER_SIZE];
  char err[1024];

  if (length != info->data_end) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("%s holds %" G_GSIZE_FORMAT " bytes, but the samples %s describes "
            "end at byte %" G_GUINT64_FORMAT ".", data, length, json,
            info->data_end), (NULL));
    return FALSE;
  }
  for (guint i = 0; i < info->total; i++) {
    gsize at = (gsize) repo->sample_offsets[i];
    for (guint j = repo->first_tensor[i]; j < repo->first_tensor[i + 1]; j++) {
      GstTensorDesc t;
      gchar *why = NULL;
      const gsize size = repo->tensor_sizes[j];
      if (tt_data_read_at (repo->fd, data, at, header, sizeof header, err,
              sizeof err) != 0) {
        GST_ELEMENT_ERROR (self, RESOURCE, READ, ("%s", err), (NULL));
        return FALSE;
      }
      if (!gst_tensor_meta_parse (header, &t, &why)) {
        GST_ELEMENT_ERROR (self, STREAM, FORMAT,
            ("%s: sample %u, tensor %u (byte %" G_GSIZE_FORMAT "): the "
                "flexible tensor header is wrong: %s", data, i,
                j - repo->first_tensor[i], at, why), (NULL));
        g_free (why);
        return FALSE;
      }
      if (gst_tensor_desc_bytes (&t) != size - GST_TENSOR_META_HEADER_SIZE) {
        gchar *dims = gst_tensor_desc_dims_string (&t);
        GST_ELEMENT_ERROR (self, STREAM, FORMAT,
            ("%s: sample %u, tensor %u (byte %" G_GSIZE_FORMAT "): its "
                "header describes %s %s, %" G_GSIZE_FORMAT " bytes, but %s "
                "gives it %" G_GSIZE_FORMAT " bytes after the header.", data,
                i, j - repo->first_tensor[i], at, dims,
                gst_tensor_type_name (t.type), gst_tensor_desc_bytes (&t),
                json, size - GST_TENSOR_META_HEADER_SIZE), (NULL));
        g_free (dims);
        return FALSE;
      }
      at += size;
    }
  }
  return TRUE;
}

/* Reads a datarepo JSON and opens its data file into set; FALSE after
 * posting an error naming the file and the field. */
static gboolean
gst_tensor_datasrc_load_repo (GstTtTensorDataSrc * self, const gchar * data,
    const gchar * json, GstTtTensorDataSrcSet * set)
{
  GError *gerr = NULL;
  gchar *text = NULL, *why = NULL;
  gsize text_len, length;
  GStatBuf st;
  GstTensorDataRepoInfo info;
  GstTensorDataRepoStatus status;
  GstTtTensorDataSrcRepo *repo = &set->repo;
  gboolean ok = FALSE;

  if (!data || !*data) {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("No location set for the datarepo data of %s.", json), (NULL));
    goto out;
  }
  if (!g_file_get_contents (json, &text, &text_len, &gerr)) {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
        ("Cannot read the datarepo JSON %s: %s", json, gerr->message), (NULL));
    goto out;
  }
  status = gst_tensor_datarepo_parse (text, (gssize) text_len, &info, &why);
  /* the set owns the flexible arrays from here, whatever happens */
  repo->sample_offsets = g_steal_pointer (&info.sample_offsets);
  repo->first_tensor = g_steal_pointer (&info.first_tensor);
  repo->tensor_sizes = g_steal_pointer (&info.tensor_sizes);
  if (status == GST_TENSOR_DATAREPO_ERROR_SYNTAX) {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
        ("Cannot read the datarepo JSON %s: %s", json, why), (NULL));
    goto out;
  }
  if (status != GST_TENSOR_DATAREPO_OK) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("%s: %s", json, why), (NULL));
    goto out;
  }
  repo->desc = info.desc;
  repo->sample_size = info.sample_size;
  memcpy (repo->offsets, info.offsets, sizeof repo->offsets);
  memcpy (repo->sizes, info.sizes, sizeof repo->sizes);
  repo->path = g_strdup (data);
  repo->fd = g_open (data, O_RDONLY | O_CLOEXEC, 0);
  if (repo->fd < 0 || fstat (repo->fd, &st) != 0) {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ, ("Cannot read %s: %s",
            data, g_strerror (errno)), (NULL));
    goto out;
  }
  if (!S_ISREG (st.st_mode)) {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ, ("Cannot read %s: not a "
            "regular file.", data), (NULL));
    goto out;
  }
  length = (gsize) st.st_size;
  if (info.desc.format == GST_TENSOR_FORMAT_FLEXIBLE) {
    if (!gst_tensor_datasrc_check_flexible (self, data, json, &info, repo,
            length))
      goto out;
  } else if (length != (gsize) info.total * repo->sample_size) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("%s holds %" G_GSIZE_FORMAT " bytes, but %s describes %"
            G_GUINT64_FORMAT " samples of %" G_GSIZE_FORMAT " bytes (%"
            G_GUINT64_FORMAT ").", data, length, json, info.total,
            repo->sample_size, info.total * repo->sample_size), (NULL));
    goto out;
  }
  set->total = (gsize) info.total;
  ok = TRUE;
out:
  g_clear_error (&gerr);
  g_free (why);
  g_free (text);
  return ok;
}

/* start() for datarepo files: the caps are the JSON's. */
gboolean
gst_tensor_datasrc_start_repo (GstTtTensorDataSrc * self, const gchar * loc,
    const gchar * json, const gchar * lab, const gchar * vloc,
    const gchar * vjson_prop, const gchar * vlab, guint start, guint num,
    guint vstart, guint vnum)
{
  gchar *vjson = NULL;
  gboolean ok = FALSE;

  if ((lab && *lab) || (vlab && *vlab)) {
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
        ("label-location and validation-label-location are for IDX files: "
            "the samples of datarepo file %s carry their labels as tensors.",
            loc), (NULL));
    return FALSE;
  }
  if (self->out_image_format != DEFAULT_IMAGE_FORMAT
      || self->out_label_format != DEFAULT_LABEL_FORMAT) {
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
        ("image-format and label-format are for IDX files: the tensors of "
            "datarepo file %s go out as %s describes them.", loc, json),
        (NULL));
    return FALSE;
  }
  if (!gst_tensor_datasrc_load_repo (self, loc, json, &self->train)
      || !gst_tensor_datasrc_set_range (self, &self->train, loc, "training",
          start, num))
    goto out;

  self->valid_shares_files = !vloc || !*vloc;
  if (!self->valid_shares_files) {
    vjson = gst_tensor_datasrc_repo_json (vloc, vjson_prop);
    if (!vjson) {
      GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
          ("validation-location %s needs validation-json (no .json beside "
              "it).", vloc), (NULL));
      goto out;
    }
    if (!gst_tensor_datasrc_load_repo (self, vloc, vjson, &self->valid)
        || !gst_tensor_datasrc_set_range (self, &self->valid, vloc,
            "validation", vstart, vnum))
      goto out;
    if (!gst_tensors_desc_equal (&self->valid.repo.desc,
            &self->train.repo.desc)) {
      GST_ELEMENT_ERROR (self, STREAM, FORMAT,
          ("%s and %s describe tensors of different shapes or types.", json,
              vjson), (NULL));
      goto out;
    }
  } else if (vnum > 0) {
    const GstTtTensorDataSrcSet *t = &self->train;
    if (vstart >= t->total || vnum > t->total - vstart) {
      GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
          ("The validation range (start %u, %u samples) does not fit the %"
              G_GSIZE_FORMAT " samples of %s.", vstart, vnum, t->total, loc),
          (NULL));
      goto out;
    }
    if (vstart < t->start + t->count && t->start < vstart + vnum) {
      GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
          ("The validation range [%u, %u) overlaps the training range "
              "[%u, %u) of %s: validation samples would be trained on.",
              vstart, vstart + vnum, t->start, t->start + t->count, loc),
          (NULL));
      goto out;
    }
    self->valid.start = vstart;
    self->valid.count = vnum;
  }
  {
    GstCaps *caps = gst_tensors_desc_to_caps (&self->train.repo.desc, 0, 1);
    GST_OBJECT_LOCK (self);
    gst_caps_take (&self->caps, caps);
    GST_OBJECT_UNLOCK (self);
  }
  self->order = g_new (guint32, MAX (self->train.count, 1));
  self->order_epoch = G_MAXUINT;
  self->position = 0;
  GST_INFO_OBJECT (self, "datarepo %s (%s): %u epoch(s) of %u training "
      "samples from %u and %u validation samples from %u; caps %"
      GST_PTR_FORMAT, loc, json, self->n_epochs, self->train.count,
      self->train.start, self->valid.count, self->valid.start, self->caps);
  ok = TRUE;
out:
  g_free (vjson);
  return ok;
}

/* One sample of a datarepo file, read from it: one memory of the
 * sample's bytes (one pread), a shared sub-memory per tensor; NULL after
 * posting an error when the file cannot be read (it shrank under us). */
GstBuffer *
gst_tensor_datasrc_repo_sample (GstTtTensorDataSrc * self,
    const GstTtTensorDataSrcSet * set, guint index)
{
  const GstTtTensorDataSrcRepo *repo = &set->repo;
  const gboolean flexible = repo->desc.format == GST_TENSOR_FORMAT_FLEXIBLE;
  guint64 at;
  gsize bytes = 0;
  GstMemory *mem;
  GstMapInfo map;
  GstBuffer *out;
  char err[1024];
  gboolean ok;

  if (flexible) {
    at = repo->sample_offsets[index];
    for (guint j = repo->first_tensor[index];
        j < repo->first_tensor[index + 1]; j++)
      bytes += repo->tensor_sizes[j];
  } else {
    at = (guint64) index *repo->sample_size;
    bytes = repo->sample_size;
  }
  mem = gst_allocator_alloc (NULL, bytes, NULL);
  gst_memory_map (mem, &map, GST_MAP_WRITE);
  ok = tt_data_read_at (repo->fd, repo->path, at, map.data, bytes, err,
      sizeof err) == 0;
  gst_memory_unmap (mem, &map);
  if (!ok) {
    gst_memory_unref (mem);
    GST_ELEMENT_ERROR (self, RESOURCE, READ, ("%s", err), (NULL));
    return NULL;
  }
  out = gst_buffer_new ();
  if (flexible) {
    /* header and data of each tensor, as datareposrc reads them */
    gsize off = 0;
    for (guint j = repo->first_tensor[index];
        j < repo->first_tensor[index + 1]; j++) {
      gst_buffer_append_memory (out, gst_memory_share (mem, off,
              repo->tensor_sizes[j]));
      off += repo->tensor_sizes[j];
    }
  } else {
    for (guint i = 0; i < repo->desc.num; i++)
      gst_buffer_append_memory (out, gst_memory_share (mem, repo->offsets[i],
              repo->sizes[i]));
  }
  gst_memory_unref (mem);
  return out;
}
