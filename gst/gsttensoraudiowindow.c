/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Audio windows (gsttensoraudiowindow.h). Frames wait in a GstAdapter;
 * a window's timestamp is its first frame's, from the adapter's last
 * timestamp and the distance since it, so buffers of any size (and a
 * window spanning several) keep exact times.
 */
#include "gsttensoraudiowindow.h"

#include <string.h>

void
gst_tensor_audio_window_init (GstTensorAudioWindow * w)
{
  memset (w, 0, sizeof *w);
  w->adapter = gst_adapter_new ();
  gst_audio_info_init (&w->info);
}

void
gst_tensor_audio_window_configure (GstTensorAudioWindow * w,
    const GstAudioInfo * info, guint window, guint hop)
{
  gst_tensor_audio_window_clear (w);
  w->info = *info;
  w->window = window;
  w->hop = hop;
}

void
gst_tensor_audio_window_clear (GstTensorAudioWindow * w)
{
  gst_adapter_clear (w->adapter);
  w->skip = 0;
}

void
gst_tensor_audio_window_free (GstTensorAudioWindow * w)
{
  g_clear_object (&w->adapter);
}

/* Drops what is left of a hop longer than the window. */
static void
audio_window_skip (GstTensorAudioWindow * w)
{
  const gsize n = MIN (w->skip, gst_adapter_available (w->adapter));
  gst_adapter_flush (w->adapter, n);
  w->skip -= n;
}

void
gst_tensor_audio_window_push (GstTensorAudioWindow * w, GstBuffer * buf)
{
  if (GST_BUFFER_IS_DISCONT (buf))
    gst_tensor_audio_window_clear (w);
  gst_adapter_push (w->adapter, buf);
  audio_window_skip (w);
}

/* Sample k of the window (frame f, channel c at k = f * channels + c) as a
 * float in [-1, 1]. */
static inline gfloat
audio_window_sample (GstAudioFormat format, const guint8 * data, gsize k)
{
  switch (format) {
    case GST_AUDIO_FORMAT_S16LE:{
      gint16 v;
      memcpy (&v, data + 2 * k, 2);
      return GINT16_FROM_LE (v) * (1.0f / 32768.0f);
    }
    case GST_AUDIO_FORMAT_S32LE:{
      gint32 v;
      memcpy (&v, data + 4 * k, 4);
      return (gfloat) (GINT32_FROM_LE (v) * (1.0 / 2147483648.0));
    }
    case GST_AUDIO_FORMAT_F32LE:{
      guint32 u;
      gfloat v;
      memcpy (&u, data + 4 * k, 4);
      u = GUINT32_FROM_LE (u);
      memcpy (&v, &u, 4);
      return v;
    }
    case GST_AUDIO_FORMAT_U8:
      return ((gint) data[k] - 128) * (1.0f / 128.0f);
    default:
      g_assert_not_reached ();
      return 0.0f;
  }
}

gboolean
gst_tensor_audio_window_pop (GstTensorAudioWindow * w, gfloat * dst,
    gboolean planar, GstClockTime * pts)
{
  const guint channels = GST_AUDIO_INFO_CHANNELS (&w->info);
  const gint bpf = GST_AUDIO_INFO_BPF (&w->info);
  const gint rate = GST_AUDIO_INFO_RATE (&w->info);
  const GstAudioFormat format = GST_AUDIO_INFO_FORMAT (&w->info);
  const gsize bytes = (gsize) w->window * bpf;
  const gsize hop_bytes = (gsize) w->hop * bpf;
  guint64 distance;
  GstClockTime prev;
  const guint8 *data;

  if (w->skip > 0 || gst_adapter_available (w->adapter) < bytes)
    return FALSE;
  prev = gst_adapter_prev_pts (w->adapter, &distance);
  *pts = GST_CLOCK_TIME_IS_VALID (prev) ? prev +
      gst_util_uint64_scale_int (distance / bpf, GST_SECOND, rate) :
      GST_CLOCK_TIME_NONE;
  data = gst_adapter_map (w->adapter, bytes);
  for (guint f = 0; f < w->window; f++)
    for (guint c = 0; c < channels; c++) {
      const gfloat v = audio_window_sample (format, data,
          (gsize) f * channels + c);
      if (planar)
        dst[(gsize) c * w->window + f] = v;
      else
        dst[(gsize) f * channels + c] = v;
    }
  gst_adapter_unmap (w->adapter);
  w->skip = hop_bytes;
  audio_window_skip (w);
  return TRUE;
}
