/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_TENSOR_LABELER_H__
#define __GST_TENSOR_LABELER_H__

#include <gst/gst.h>
#include <gst/base/gstbasetransform.h>
#include <gst/video/video.h>

#include "gsttensoraudiowindow.h"
#include "gsttensorinfo.h"

G_BEGIN_DECLS

#define GST_TYPE_TENSOR_LABELER (gst_tensor_labeler_get_type ())
G_DECLARE_FINAL_TYPE (GstTtTensorLabeler, gst_tensor_labeler, GST,
    TENSOR_LABELER, GstBaseTransform)

typedef enum
{
  GST_TENSOR_LABELER_LAYOUT_PLANAR,
  GST_TENSOR_LABELER_LAYOUT_INTERLEAVED,
} GstTtTensorLabelerLayout;

struct _GstTtTensorLabeler
{
  GstBaseTransform parent;

  /* properties, under the object lock: label is read for every frame,
   * num-classes and layout when the caps are set */
  gint label;
  guint num_classes;
  GstTtTensorLabelerLayout layout;
  guint window, hop;

  /* streaming state, set with the caps. Invariant when configured:
   * classes > 0; for video, channels is 1 (GRAY8) or 3 (R, G, B read
   * from the frame's components); for audio, channels is the stream's and
   * awin cuts windows of window frames, hop apart. */
  gboolean audio;
  GstVideoInfo info;
  GstTensorAudioWindow awin;
  gint awin_label;              /* the label of the frames in awin */
  guint channels;
  guint classes;
  GstTtTensorLabelerLayout out_layout;
  gboolean configured;
};

GST_ELEMENT_REGISTER_DECLARE (tensor_labeler);

G_END_DECLS

#endif /* __GST_TENSOR_LABELER_H__ */
