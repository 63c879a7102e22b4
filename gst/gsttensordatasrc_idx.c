/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor_datasrc's IDX files: an images and a labels file loaded and
 * checked as a pair, the labels checked against num-classes, and the
 * start from them (training and validation ranges, image and label
 * tensors, caps).
 */
#include "gsttensordatasrc_private.h"

#include <string.h>

/* Loads a file pair and checks it; FALSE after posting an error. */
static gboolean
gst_tensor_datasrc_load_pair (GstTtTensorDataSrc * self, const gchar * images,
    const gchar * labels, const gchar * prefix, GstTtTensorDataSrcSet * set)
{
  char err[1024];
  if (!images || !*images) {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("%slocation is not set: it names the IDX images file%s.", prefix,
            *prefix ? "" : " (or, with json=, a datarepo file)"), (NULL));
    return FALSE;
  }
  if (!labels || !*labels) {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("%slabel-location is not set: the IDX images of %slocation=%s need "
            "their labels file (e.g. train-labels-idx1-ubyte.gz beside "
            "train-images-idx3-ubyte.gz).", prefix, prefix, images), (NULL));
    return FALSE;
  }
  /* the images stay open and are read as they are pushed; the labels,
   * a byte a sample, are read whole */
  tt_idx_file lf;
  gboolean ok;
  if (tt_idx_file_open (images, &set->images, err, sizeof err) != 0
      || tt_idx_file_open (labels, &lf, err, sizeof err) != 0) {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ, ("%s", err), (NULL));
    return FALSE;
  }
  if (tt_idx_file_check_pair (&set->images, &lf, err, sizeof err) != 0) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("%s and %s: %s", images,
            labels, err), (NULL));
    tt_idx_file_close (&lf);
    return FALSE;
  }
  set->labels = g_malloc (MAX (lf.count, 1));
  ok = tt_idx_file_read (&lf, 0, lf.count, set->labels, err, sizeof err) == 0;
  tt_idx_file_close (&lf);
  if (!ok) {
    GST_ELEMENT_ERROR (self, RESOURCE, READ, ("%s", err), (NULL));
    return FALSE;
  }
  if (set->images.ndims < 2) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("%s: a 1-D IDX file holds no images.", images), (NULL));
    return FALSE;
  }
  if (set->images.type != TT_IDX_UINT8 && set->images.type != TT_IDX_FLOAT32) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("%s: IDX element type 0x%02x; only uint8 (0x08) and float32 (0x0D) "
            "images are supported.", images, set->images.type), (NULL));
    return FALSE;
  }
  set->total = set->images.count;
  return TRUE;
}

static gboolean
gst_tensor_datasrc_check_labels (GstTtTensorDataSrc * self,
    const GstTtTensorDataSrcSet * set, const gchar * file)
{
  for (guint i = set->start; i < set->start + set->count; i++)
    if (set->labels[i] >= self->classes) {
      GST_ELEMENT_ERROR (self, STREAM, FORMAT,
          ("%s: label %u of sample %u is not below num-classes=%u.", file,
              set->labels[i], i, self->classes), (NULL));
      return FALSE;
    }
  return TRUE;
}

/* start() for IDX files: the caps are the images' and the labels'. */
gboolean
gst_tensor_datasrc_start_idx (GstTtTensorDataSrc * self, const gchar * loc,
    const gchar * lab, const gchar * vloc, const gchar * vlab, guint start,
    guint num, guint vstart, guint vnum)
{
  GstTensorsDesc desc;
  GstTensorDesc *image = &desc.tensors[0], *label = &desc.tensors[1];
  const tt_idx_file *im;

  if (!gst_tensor_datasrc_load_pair (self, loc, lab, "", &self->train)
      || !gst_tensor_datasrc_set_range (self, &self->train, loc, "training",
          start, num))
    return FALSE;
  if (self->out_label_format == GST_TENSOR_DATASRC_LABEL_ONEHOT
      && !gst_tensor_datasrc_check_labels (self, &self->train, lab))
    return FALSE;

  self->valid_shares_files = !vloc && !vlab;
  if (!self->valid_shares_files) {
    if (!gst_tensor_datasrc_load_pair (self, vloc, vlab, "validation-",
            &self->valid)
        || !gst_tensor_datasrc_set_range (self, &self->valid, vloc,
            "validation", vstart, vnum))
      return FALSE;
    if (self->valid.images.type != self->train.images.type
        || memcmp (self->valid.images.dims + 1, self->train.images.dims + 1,
            3 * sizeof (guint32))) {
      GST_ELEMENT_ERROR (self, STREAM, FORMAT,
          ("%s and %s hold images of different types or sizes.", vloc, loc),
          (NULL));
      return FALSE;
    }
  } else if (vnum > 0) {
    /* the validation range reads the training files: keep them apart */
    self->valid.start = vstart;
    if (vstart >= self->train.images.count
        || vnum > self->train.images.count - vstart) {
      GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
          ("The validation range (start %u, %u samples) does not fit the %"
              G_GSIZE_FORMAT " samples of %s.", vstart, vnum,
              self->train.images.count, loc), (NULL));
      return FALSE;
    }
    self->valid.count = vnum;
    if (vstart < self->train.start + self->train.count
        && self->train.start < vstart + vnum) {
      GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
          ("The validation range [%u, %u) overlaps the training range "
              "[%u, %u) of %s: validation samples would be trained on.",
              vstart, vstart + vnum, self->train.start,
              self->train.start + self->train.count, loc), (NULL));
      return FALSE;
    }
  }
  if (self->valid.count > 0
      && self->out_label_format == GST_TENSOR_DATASRC_LABEL_ONEHOT) {
    /* a view of the validation range, in whichever files hold it */
    GstTtTensorDataSrcSet view = self->valid_shares_files ? self->train :
        self->valid;
    view.start = self->valid.start;
    view.count = self->valid.count;
    if (!gst_tensor_datasrc_check_labels (self, &view,
            self->valid_shares_files ? lab : vlab))
      return FALSE;
  }
  /* personalization: only some classes, N samples of each (the
   * validation range's picks index the files that hold it) */
  if (!gst_tensor_datasrc_select (self, self->sel_classes,
          self->sel_per_class, &self->train, self->train.labels, lab,
          "training")
      || (self->valid.count > 0
          && !gst_tensor_datasrc_select (self, self->sel_classes,
              self->sel_per_class, &self->valid, self->valid_shares_files ?
              self->train.labels : self->valid.labels,
              self->valid_shares_files ? lab : vlab, "validation")))
    return FALSE;

  im = &self->train.images;
  if (im->type == TT_IDX_FLOAT32
      && self->out_image_format == GST_TENSOR_DATASRC_IMAGE_UINT8) {
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
        ("%s holds float32 images: set image-format=float32.", loc), (NULL));
    return FALSE;
  }

  /* dimensions innermost first; a 2-D image gets tensor_converter's
   * channel 1 in front, as a GRAY8 frame would */
  memset (&desc, 0, sizeof desc);
  desc.num = 2;
  image->rank = 0;
  if (im->ndims == 3)
    image->dims[image->rank++] = 1;
  for (gint d = im->ndims - 1; d >= 1; d--)
    image->dims[image->rank++] = im->dims[d];
  while (image->rank < 4)
    image->dims[image->rank++] = 1;
  image->type = self->out_image_format == GST_TENSOR_DATASRC_IMAGE_UINT8 ?
      GST_TENSOR_TYPE_UINT8 : GST_TENSOR_TYPE_FLOAT32;
  label->rank = 4;
  label->dims[0] = self->out_label_format == GST_TENSOR_DATASRC_LABEL_ONEHOT ?
      self->classes : 1;
  label->dims[1] = label->dims[2] = label->dims[3] = 1;
  label->type = GST_TENSOR_TYPE_FLOAT32;
  self->image_bytes = gst_tensor_desc_bytes (image);
  {
    /* get_caps may run in another thread: the caps are read under lock */
    GstCaps *caps = gst_tensors_desc_to_caps (&desc, 0, 1);
    GST_OBJECT_LOCK (self);
    gst_caps_take (&self->caps, caps);
    GST_OBJECT_UNLOCK (self);
  }

  gst_tensor_datasrc_make_store (self);
  self->scratch = g_malloc ((gsize) MAX (self->list_size, 1) * im->item_bytes);
  self->order = g_new (guint32, MAX (self->train.count, 1));
  self->order_epoch = G_MAXUINT;
  self->position = 0;
  GST_INFO_OBJECT (self, "%u epoch(s) of %u training samples from %u and %u "
      "validation samples from %u; caps %" GST_PTR_FORMAT, self->n_epochs,
      self->train.count, self->train.start, self->valid.count,
      self->valid.start, self->caps);
  return TRUE;
}
