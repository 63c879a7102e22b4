/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor_datasrc's start and stop: the properties read once at
 * READY->PAUSED, the training and validation sets (their files and
 * ranges) opened from them by the IDX or the datarepo start, and all of
 * it released at stop.
 */
#include "gsttensordatasrc_private.h"

#include <string.h>
#include <unistd.h>

/* A set with no file open. */
void
gst_tensor_datasrc_set_init (GstTtTensorDataSrcSet * set)
{
  memset (set, 0, sizeof *set);
  tt_idx_file_init (&set->images);
  set->repo.fd = -1;
}

static void
gst_tensor_datasrc_set_clear (GstTtTensorDataSrcSet * set)
{
  tt_idx_file_close (&set->images);
  g_free (set->labels);
  if (set->repo.fd >= 0)
    close (set->repo.fd);
  g_free (set->repo.path);
  g_free (set->repo.sample_offsets);
  g_free (set->repo.first_tensor);
  g_free (set->repo.tensor_sizes);
  g_free (set->pick);
  gst_tensor_datasrc_set_init (set);
}

/* Sets the range [start, start + num) of set, num 0 meaning to the end. */
gboolean
gst_tensor_datasrc_set_range (GstTtTensorDataSrc * self,
    GstTtTensorDataSrcSet * set, const gchar * file, const gchar * what,
    guint start, guint num)
{
  const gsize total = set->total;
  if (start >= total || (num && num > total - start)) {
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
        ("The %s range (start %u, %u samples) does not fit the %"
            G_GSIZE_FORMAT " samples of %s.", what, start, num, total, file),
        (NULL));
    return FALSE;
  }
  set->start = start;
  set->count = num ? num : (guint) (total - start);
  return TRUE;
}

/* Reads and checks the files (at READY->PAUSED). */
gboolean
gst_tensor_datasrc_open (GstTtTensorDataSrc * self)
{
  gchar *loc, *lab, *vloc, *vlab, *json, *vjson;
  guint start, num, vstart, vnum;
  gboolean ok = FALSE;

  GST_OBJECT_LOCK (self);
  loc = g_strdup (self->location);
  lab = g_strdup (self->label_location);
  vloc = g_strdup (self->validation_location);
  vlab = g_strdup (self->validation_label_location);
  json = gst_tensor_datasrc_repo_json (self->location, self->json);
  vjson = g_strdup (self->validation_json);
  start = self->start_sample;
  num = self->num_samples;
  vstart = self->validation_start_sample;
  vnum = self->validation_num_samples;
  self->n_epochs = self->epochs;
  self->do_shuffle = self->shuffle;
  self->rng_seed = self->seed;
  self->out_image_format = self->image_format;
  self->out_label_format = self->label_format;
  self->classes = self->num_classes;
  self->list_size = self->push_list_size;
  g_free (self->sel_classes);
  self->sel_classes = g_strdup (self->classes_spec);
  self->sel_per_class = self->per_class;
  GST_OBJECT_UNLOCK (self);

  self->repo_mode = json != NULL;
  if (self->repo_mode && gst_tensor_datasrc_select_wanted (self->sel_classes,
          self->sel_per_class)) {
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
        ("classes and per-class choose samples by their IDX labels: they "
            "are for IDX files (location with label-location), not the "
            "datarepo file %s.", loc), (NULL));
    ok = FALSE;
  } else if (self->repo_mode)
    ok = gst_tensor_datasrc_start_repo (self, loc, json, lab, vloc, vjson,
        vlab, start, num, vstart, vnum);
  else
    ok = gst_tensor_datasrc_start_idx (self, loc, lab, vloc, vlab, start, num,
        vstart, vnum);
  g_free (loc);
  g_free (lab);
  g_free (vloc);
  g_free (vlab);
  g_free (json);
  g_free (vjson);
  if (!ok)
    gst_tensor_datasrc_stop (GST_BASE_SRC (self));
  return ok;
}

gboolean
gst_tensor_datasrc_stop (GstBaseSrc * src)
{
  GstTtTensorDataSrc *self = GST_TENSOR_DATASRC (src);
  if (self->store) {
    /* buffers still out keep the label table alive */
    gst_tensor_datasrc_store_release (self->store);
    self->store = NULL;
  }
  g_clear_pointer (&self->scratch, g_free);
  gst_tensor_datasrc_set_clear (&self->train);
  gst_tensor_datasrc_set_clear (&self->valid);
  g_clear_pointer (&self->order, g_free);
  g_clear_pointer (&self->sel_classes, g_free);
  GST_OBJECT_LOCK (self);
  gst_caps_replace (&self->caps, NULL);
  GST_OBJECT_UNLOCK (self);
  self->position = 0;
  return TRUE;
}
