/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Audio windows for tensor_labeler: interleaved audio/x-raw cut into
 * windows of a fixed number of frames, a hop apart, whatever the buffer
 * sizes, each converted to float32 in [-1, 1].
 */
#ifndef __GST_TENSOR_AUDIO_WINDOW_H__
#define __GST_TENSOR_AUDIO_WINDOW_H__

#include <gst/gst.h>
#include <gst/audio/audio.h>
#include <gst/base/gstadapter.h>

G_BEGIN_DECLS

typedef struct
{
  GstAdapter *adapter;
  GstAudioInfo info;
  guint window;                 /* frames per window */
  guint hop;                    /* frames from one window to the next */
  gsize skip;                   /* bytes still to drop before the next
                                 * window (a hop longer than the window) */
} GstTensorAudioWindow;

/* The sample formats a window reads. */
#define GST_TENSOR_AUDIO_WINDOW_FORMATS "{ S16LE, S32LE, F32LE, U8 }"

void gst_tensor_audio_window_init (GstTensorAudioWindow * w);
void gst_tensor_audio_window_configure (GstTensorAudioWindow * w,
    const GstAudioInfo * info, guint window, guint hop);
/* Takes buf; a discontinuity drops the frames waiting. */
void gst_tensor_audio_window_push (GstTensorAudioWindow * w, GstBuffer * buf);
/* The next window, if enough frames wait: window * channels floats into
 * dst, channel-major (planar) or frame-major (interleaved); its timestamp
 * (GST_CLOCK_TIME_NONE when the input had none) in *pts. */
gboolean gst_tensor_audio_window_pop (GstTensorAudioWindow * w, gfloat * dst,
    gboolean planar, GstClockTime * pts);
void gst_tensor_audio_window_clear (GstTensorAudioWindow * w);
void gst_tensor_audio_window_free (GstTensorAudioWindow * w);

G_END_DECLS

#endif /* __GST_TENSOR_AUDIO_WINDOW_H__ */
