/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tt-launch: runs a gst-launch pipeline description and changes element
 * properties while it plays, on a schedule of buffers or from standard
 * input, so that a live source can be labelled without writing a program
 * (camera-train.sh switches videotestsrc patterns and tensor_labeler's
 * label together with it).
 *
 *   tt-launch [--every N] [--at NAME] [--step STEP]... [--stdin]
 *             [--stall-timeout SECONDS] PIPELINE-DESCRIPTION...
 *
 *   STEP     "element.property=value[;element.property=value...]"
 *   --every  apply the next --step (round robin) every N buffers that reach
 *            the sink pad of the element NAME (--at, default "labeler")
 *   --stdin  read steps from standard input, one per line; a line holding
 *            only an integer K means "NAME.label=K" (a key press per class)
 *   --stall-timeout  a pipeline that makes no progress for this long is an
 *            error (default 30 s, 0: wait for ever). Before PLAYING,
 *            progress is a state change (a sink that prerolls); in
 *            PLAYING, a buffer or an event through any pad. The error
 *            says where it stalled: the state change pending, the sinks
 *            still waiting for preroll, the elements no buffer came out of,
 *            the pads not linked, or where the last data went in and did
 *            not come out.
 *
 * A step is applied in the streaming thread, just before a buffer enters
 * NAME, and that buffer is dropped: elements upstream of NAME in the same
 * thread (no queue between) make the next buffer with the new settings, so
 * no frame carries a stale label. The tool prints the element messages of
 * tensor_trainer and tensor_planner, warnings and errors as key=value lines,
 * turns Ctrl-C into EOS (the trainer saves its model before the pipeline
 * ends; a second Ctrl-C stops at once), and exits 0 after EOS (once every
 * branch has had its EOS, so that what elements post at their EOS is
 * printed; "eos" is the last line), 1 after an
 * error or a stall, 2 when the description does not parse (an element
 * that is not installed, a link that cannot be made: the parse error is
 * printed, never run as a partial pipeline).
 */
#include <gst/gst.h>
#include <glib-unix.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_STALL_TIMEOUT 30.0
/* after an error or a stall, how long the pipeline may take to stop before
 * the process exits anyway: a streaming thread stuck in an element would
 * otherwise keep the state change to NULL (and the process) waiting */
#define TEARDOWN_SECONDS 3
/* The pipeline's EOS comes when its sinks have it; a branch that ends in
 * another element's sink pad (tensor_predictor into textoverlay's text
 * pad) may still be working then, and the message it posts at its own EOS
 * (tensor-predictor-summary) would be lost if the process ended at once.
 * After the pipeline's EOS, wait this long at most for every linked sink
 * pad to have its EOS too. */
#define EOS_SETTLE_SECONDS 5
#define EOS_SETTLE_POLL_MS 10

/* The data seen by one pad, counted in its streaming thread; the watchdog
 * (main loop) only reads the counters, so the per-buffer cost is one
 * atomic increment. */
typedef struct
{
  GstPad *pad;                  /* owned */
  gint buffers;                 /* atomic: buffers and buffer lists */
  gint events;                  /* atomic: downstream events */
  gint seen;                    /* watchdog: buffers + events at its last look */
  gint64 changed;               /* watchdog: monotonic us of the last change */
} PadWatch;

typedef struct
{
  GstElement *pipeline;
  GMainLoop *loop;
  gchar **steps;                /* round robin */
  guint n_steps, next_step;
  guint every;
  guint64 count;
  GMutex lock;                  /* guards pending and watches */
  GQueue pending;               /* steps from stdin, applied at a buffer */
  GPtrArray *watches;           /* PadWatch, one per pad of the pipeline */
  const gchar *at;
  gint status;
  guint interrupts;
  /* stall watchdog, main loop only */
  gint64 stall_us;              /* 0: off */
  gint64 tick_us;
  gint64 progress;              /* monotonic us of the last progress */
  gboolean playing;             /* the pipeline reached PLAYING */
  gint64 eos_at;                /* monotonic us of the pipeline's EOS, or 0 */
} Runner;

static GQuark watch_quark;

/* "elem.prop=value;..." applied to the pipeline's elements. */
static void
apply_step (Runner * r, const gchar * step)
{
  gchar **parts = g_strsplit (step, ";", -1);
  for (gchar ** p = parts; *p; p++) {
    gchar *item = g_strstrip (*p), *dot = strchr (item, '.');
    gchar *eq = strchr (item, '=');
    GstElement *e;
    if (!*item)
      continue;
    if (!dot || !eq || eq < dot) {
      g_printerr ("tt-launch: step \"%s\": expected element.property=value\n",
          item);
      continue;
    }
    *dot = *eq = '\0';
    e = gst_bin_get_by_name (GST_BIN (r->pipeline), item);
    if (!e) {
      g_printerr ("tt-launch: no element named \"%s\"\n", item);
      continue;
    }
    if (!g_object_class_find_property (G_OBJECT_GET_CLASS (e), dot + 1))
      g_printerr ("tt-launch: %s has no property \"%s\"\n", item, dot + 1);
    else
      gst_util_set_object_arg (G_OBJECT (e), dot + 1, eq + 1);
    gst_object_unref (e);
  }
  g_strfreev (parts);
}

static GstPadProbeReturn
on_buffer (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  Runner *r = data;
  gchar *step;
  (void) pad;
  (void) info;

  g_mutex_lock (&r->lock);
  step = g_queue_pop_head (&r->pending);
  g_mutex_unlock (&r->lock);
  if (!step && r->every && r->n_steps && r->count++ % r->every == 0)
    step = g_strdup (r->steps[r->next_step++ % r->n_steps]);
  if (!step)
    return GST_PAD_PROBE_OK;
  apply_step (r, step);
  g_free (step);
  return GST_PAD_PROBE_DROP;
}

/* Counts the data through one pad: what the stall watchdog calls progress
 * and what its report reads to say where the data stopped. */
static GstPadProbeReturn
on_pad_data (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  PadWatch *w = data;
  (void) pad;

  if (info->type & (GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_BUFFER_LIST))
    g_atomic_int_inc (&w->buffers);
  else
    g_atomic_int_inc (&w->events);
  return GST_PAD_PROBE_OK;
}

static void
watch_pad (Runner * r, GstPad * pad)
{
  PadWatch *w;

  g_mutex_lock (&r->lock);
  /* a pad can be seen twice: listed with its element and announced by
   * pad-added */
  if (g_object_get_qdata (G_OBJECT (pad), watch_quark)) {
    g_mutex_unlock (&r->lock);
    return;
  }
  w = g_new0 (PadWatch, 1);
  w->pad = gst_object_ref (pad);
  w->changed = g_get_monotonic_time ();
  g_object_set_qdata (G_OBJECT (pad), watch_quark, w);
  g_ptr_array_add (r->watches, w);
  g_mutex_unlock (&r->lock);
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER |
      GST_PAD_PROBE_TYPE_BUFFER_LIST | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM,
      on_pad_data, w, NULL);
}

static void
free_watch (gpointer data)
{
  PadWatch *w = data;
  gst_object_unref (w->pad);
  g_free (w);
}

static void
on_pad_added (GstElement * element, GstPad * pad, gpointer data)
{
  (void) element;
  watch_pad (data, pad);
}

static void
watch_element (Runner * r, GstElement * element)
{
  GstIterator *it = gst_element_iterate_pads (element);
  GValue v = G_VALUE_INIT;
  gboolean done = FALSE;

  /* dynamic pads (decodebin, tee's request pads made later) */
  g_signal_connect (element, "pad-added", G_CALLBACK (on_pad_added), r);
  while (!done) {
    switch (gst_iterator_next (it, &v)) {
      case GST_ITERATOR_OK:
        watch_pad (r, g_value_get_object (&v));
        g_value_reset (&v);
        break;
      case GST_ITERATOR_RESYNC:
        gst_iterator_resync (it);
        break;
      default:
        done = TRUE;
        break;
    }
  }
  g_value_unset (&v);
  gst_iterator_free (it);
}

static void
on_deep_element_added (GstBin * bin, GstBin * sub_bin, GstElement * element,
    gpointer data)
{
  (void) bin;
  (void) sub_bin;
  watch_element (data, element);
}

/* Every element of the pipeline, bins included, in turn. */
static GList *
pipeline_elements (Runner * r)
{
  GstIterator *it = gst_bin_iterate_recurse (GST_BIN (r->pipeline));
  GValue v = G_VALUE_INIT;
  GList *list = NULL;
  gboolean done = FALSE;

  while (!done) {
    switch (gst_iterator_next (it, &v)) {
      case GST_ITERATOR_OK:
        list = g_list_prepend (list, g_value_dup_object (&v));
        g_value_reset (&v);
        break;
      case GST_ITERATOR_RESYNC:
        g_list_free_full (list, gst_object_unref);
        list = NULL;
        gst_iterator_resync (it);
        break;
      default:
        done = TRUE;
        break;
    }
  }
  g_value_unset (&v);
  gst_iterator_free (it);
  return g_list_reverse (list);
}

static PadWatch *
pad_watch (GstPad * pad)
{
  return g_object_get_qdata (G_OBJECT (pad), watch_quark);
}

/* Whether a streaming thread is inside the pad now: it holds the pad's
 * stream lock while the element's chain or event function (a sink pad) or
 * its task (a source's src pad) runs. */
static gboolean
pad_busy (GstPad * pad)
{
  if (!GST_PAD_STREAM_TRYLOCK (pad))
    return TRUE;
  GST_PAD_STREAM_UNLOCK (pad);
  return FALSE;
}

/* Whether a streaming thread that is inside the element is not inside the
 * element downstream: where that thread stopped. */
static gboolean
element_holds_thread (GstElement * e)
{
  gboolean inside = FALSE, passed_on = FALSE;
  GList *pads = e->sinkpads ? e->sinkpads : e->srcpads;

  for (GList * l = pads; l && !inside; l = l->next)
    inside = pad_busy (l->data);
  for (GList * l = e->srcpads; l && inside && !passed_on; l = l->next) {
    GstPad *peer = gst_pad_get_peer (l->data);
    if (peer) {
      passed_on = pad_busy (peer);
      gst_object_unref (peer);
    }
  }
  return inside && !passed_on;
}

/* One element's part in a stall: pads not linked, whether data went in
 * and nothing came out (ever, or in the last tick that saw data: latest),
 * and whether a streaming thread is stuck in it. */
static void
report_element (GstElement * e, gint64 latest, GString * where, GString * last)
{
  const gchar *name = GST_OBJECT_NAME (e);
  guint in = 0, sinks = 0, srcs = 0;
  gboolean in_last = FALSE, out_last = FALSE;

  GST_OBJECT_LOCK (e);
  if (element_holds_thread (e))
    g_string_append_printf (last, "\n  a streaming thread is inside %s "
        "(%s)", name, e->sinkpads ? "its sink pad's function has not "
        "returned" : "making data");
  for (GList * l = e->sinkpads; l; l = l->next) {
    PadWatch *w = pad_watch (l->data);
    sinks++;
    if (w) {
      in += (guint) g_atomic_int_get (&w->buffers);
      in_last |= w->changed == latest && w->seen;
    }
  }
  for (GList * l = e->srcpads; l; l = l->next) {
    GstPad *pad = l->data;
    PadWatch *w = pad_watch (pad);
    guint out = w ? (guint) g_atomic_int_get (&w->buffers) : 0;
    srcs++;
    if (w)
      out_last |= w->changed == latest && w->seen;
    if (!gst_pad_is_linked (pad))
      g_string_append_printf (where, "\n  %s:%s is not linked", name,
          GST_PAD_NAME (pad));
    else if (out == 0 && sinks == 0)
      g_string_append_printf (where, "\n  no buffer came out of %s "
          "(a source, pad %s)", name, GST_PAD_NAME (pad));
    else if (out == 0 && in > 0)
      g_string_append_printf (where, "\n  no buffer flowed past %s: %u "
          "buffer(s) went in, none came out of %s:%s", name, in, name,
          GST_PAD_NAME (pad));
  }
  GST_OBJECT_UNLOCK (e);
  /* (where data went in and nothing ever came out says it already) */
  if (in_last && srcs > 0 && !out_last && !where->len)
    g_string_append_printf (last, "\n  the last data went into %s and did "
        "not come out", name);
}

/* Says where the pipeline stalled, on standard error. */
static void
report_stall (Runner * r, gint64 now)
{
  GstState state = GST_STATE_VOID_PENDING, pending = GST_STATE_VOID_PENDING;
  GString *where = g_string_new (NULL), *last = g_string_new (NULL);
  GString *waiting = g_string_new (NULL);
  GList *elements = pipeline_elements (r);
  gint64 latest = 0;
  double seconds = (now - r->progress) / (double) G_USEC_PER_SEC;

  g_mutex_lock (&r->lock);
  for (guint i = 0; i < r->watches->len; i++) {
    PadWatch *w = g_ptr_array_index (r->watches, i);
    if (w->seen && w->changed > latest)
      latest = w->changed;
  }
  for (GList * l = elements; l; l = l->next) {
    GstElement *e = l->data;
    GstState s, p;
    if (GST_IS_BIN (e))
      continue;
    if (gst_element_get_state (e, &s, &p, 0) == GST_STATE_CHANGE_ASYNC)
      g_string_append_printf (waiting, "%s%s", waiting->len ? ", " : "",
          GST_OBJECT_NAME (e));
    report_element (e, latest, where, last);
  }
  g_mutex_unlock (&r->lock);

  gst_element_get_state (r->pipeline, &state, &pending, 0);
  if (r->playing)
    g_printerr ("tt-launch: error: the pipeline stalled: no buffer or event "
        "went through any pad for %.1f s in PLAYING", seconds);
  else
    g_printerr ("tt-launch: error: the pipeline stalled: no state change "
        "for %.1f s (state %s, going to %s): it cannot preroll", seconds,
        gst_element_state_get_name (state),
        gst_element_state_get_name (pending == GST_STATE_VOID_PENDING ?
            GST_STATE_PLAYING : pending));
  if (waiting->len)
    g_printerr ("\n  waiting for preroll (a first buffer): %s", waiting->str);
  g_printerr ("%s", where->str);
  g_printerr ("%s", last->str);
  if (latest)
    g_printerr ("\n  data last moved %.1f s ago",
        (now - latest) / (double) G_USEC_PER_SEC);
  else
    g_printerr ("\n  no data moved at all");
  g_printerr ("\ntt-launch: (--stall-timeout SECONDS changes the limit, "
      "0 waits for ever)\n");
  g_list_free_full (elements, gst_object_unref);
  g_string_free (where, TRUE);
  g_string_free (last, TRUE);
  g_string_free (waiting, TRUE);
}

/* The stall watchdog, on the main loop. */
static gboolean
on_tick (gpointer data)
{
  Runner *r = data;
  gint64 now = g_get_monotonic_time ();
  gboolean moved = FALSE;

  g_mutex_lock (&r->lock);
  for (guint i = 0; i < r->watches->len; i++) {
    PadWatch *w = g_ptr_array_index (r->watches, i);
    gint n = (gint) ((guint) g_atomic_int_get (&w->buffers) +
        (guint) g_atomic_int_get (&w->events));
    if (n != w->seen) {
      w->seen = n;
      w->changed = now;
      moved = TRUE;
    }
  }
  g_mutex_unlock (&r->lock);
  /* before PLAYING, data may flow for ever into an element that drops it
   * while a sink waits for its first buffer: only a state change is
   * progress there */
  if (moved && r->playing)
    r->progress = now;
  if (now - r->progress < r->stall_us)
    return G_SOURCE_CONTINUE;
  report_stall (r, now);
  r->status = 1;
  g_main_loop_quit (r->loop);
  return G_SOURCE_REMOVE;
}

static gpointer
teardown_guard (gpointer data)
{
  g_usleep (TEARDOWN_SECONDS * G_USEC_PER_SEC);
  g_printerr ("tt-launch: the pipeline did not stop within %d s; exiting\n",
      TEARDOWN_SECONDS);
  _exit (GPOINTER_TO_INT (data));
  return NULL;
}

static gboolean
on_stdin (GIOChannel * ch, GIOCondition cond, gpointer data)
{
  Runner *r = data;
  gchar *line = NULL;
  gsize len;
  (void) cond;

  if (g_io_channel_read_line (ch, &line, &len, NULL, NULL) !=
      G_IO_STATUS_NORMAL) {
    g_free (line);
    return G_SOURCE_REMOVE;
  }
  g_strstrip (line);
  if (*line) {
    gchar *end;
    gint64 k = g_ascii_strtoll (line, &end, 10);
    gchar *step = *end == '\0' ? g_strdup_printf ("%s.label=%" G_GINT64_FORMAT,
        r->at, k) : g_strdup (line);
    g_mutex_lock (&r->lock);
    g_queue_push_tail (&r->pending, step);
    g_mutex_unlock (&r->lock);
  }
  g_free (line);
  return G_SOURCE_CONTINUE;
}

static gboolean
on_interrupt (gpointer data)
{
  Runner *r = data;
  if (r->interrupts++ == 0) {
    g_printerr ("tt-launch: interrupt: sending EOS (the model is saved; "
        "Ctrl-C again stops at once)\n");
    gst_element_send_event (r->pipeline, gst_event_new_eos ());
  } else {
    /* EOS did not get through (a stalled pipeline): the user decides */
    g_printerr ("tt-launch: second interrupt: stopping now\n");
    r->status = 130;
    g_main_loop_quit (r->loop);
  }
  return G_SOURCE_CONTINUE;
}

/* A structure as "name key=value key=value" on one line. */
static void
print_structure (const GstStructure * s)
{
  gchar *text = gst_structure_to_string (s);
  /* "name, key=(type)value, ...;" -> "name key=value ..." */
  GString *out = g_string_new (NULL);
  for (const gchar * p = text; *p; p++) {
    if (*p == '(' && p > text && p[-1] == '=') {
      const gchar *close = strchr (p, ')');
      if (close) {
        p = close;
        continue;
      }
    }
    if (*p == ',' && p[1] == ' ') {
      g_string_append_c (out, ' ');
      p++;
      continue;
    }
    if (*p == ';' && p[1] == '\0')
      break;
    g_string_append_c (out, *p);
  }
  g_print ("%s\n", out->str);
  g_string_free (out, TRUE);
  g_free (text);
}

/* Whether every linked sink pad of the pipeline has had its EOS. */
static gboolean
all_sink_pads_eos (Runner * r)
{
  GList *elements = pipeline_elements (r);
  gboolean eos = TRUE;

  for (GList * l = elements; l && eos; l = l->next) {
    GstElement *e = l->data;
    GST_OBJECT_LOCK (e);
    for (GList * p = e->sinkpads; p && eos; p = p->next)
      eos = !gst_pad_is_linked (p->data) || GST_PAD_IS_EOS (p->data);
    GST_OBJECT_UNLOCK (e);
  }
  g_list_free_full (elements, gst_object_unref);
  return eos;
}

static gboolean on_message (GstBus * bus, GstMessage * m, gpointer data);

/* After the pipeline's EOS: ends the run once the late branches have
 * their EOS, with the messages they posted on the way printed first. */
static gboolean
on_eos_settle (gpointer data)
{
  Runner *r = data;
  GstBus *bus;
  GstMessage *m;

  if (!all_sink_pads_eos (r)) {
    if (g_get_monotonic_time () - r->eos_at <
        EOS_SETTLE_SECONDS * G_USEC_PER_SEC)
      return G_SOURCE_CONTINUE;
    g_printerr ("tt-launch: warning: %d s after the pipeline's EOS, a "
        "branch has not had its EOS yet; its last messages may be "
        "missing\n", EOS_SETTLE_SECONDS);
  }
  /* posted before the pad's EOS, so on the bus by now */
  bus = gst_element_get_bus (r->pipeline);
  while (r->status == 0 && (m = gst_bus_pop (bus))) {
    on_message (bus, m, r);
    gst_message_unref (m);
  }
  gst_object_unref (bus);
  if (r->status == 0)
    g_print ("eos\n");
  g_main_loop_quit (r->loop);
  return G_SOURCE_REMOVE;
}

static gboolean
on_message (GstBus * bus, GstMessage * m, gpointer data)
{
  Runner *r = data;
  GError *err = NULL;
  gchar *debug = NULL;
  (void) bus;

  switch (GST_MESSAGE_TYPE (m)) {
    case GST_MESSAGE_ELEMENT:{
      const GstStructure *s = gst_message_get_structure (m);
      if (s && g_str_has_prefix (gst_structure_get_name (s), "tensor-"))
        print_structure (s);
      break;
    }
    case GST_MESSAGE_WARNING:
      gst_message_parse_warning (m, &err, &debug);
      g_printerr ("WARNING from %s: %s\n", GST_OBJECT_NAME (m->src),
          err->message);
      break;
    case GST_MESSAGE_ERROR:
      gst_message_parse_error (m, &err, &debug);
      g_printerr ("ERROR from %s: %s\n%s%s", GST_OBJECT_NAME (m->src),
          err->message, debug ? debug : "", debug ? "\n" : "");
      r->status = 1;
      g_main_loop_quit (r->loop);
      break;
    case GST_MESSAGE_STATE_CHANGED:{
      GstState old_state, new_state;
      r->progress = g_get_monotonic_time ();
      if (m->src == GST_OBJECT (r->pipeline)) {
        gst_message_parse_state_changed (m, &old_state, &new_state, NULL);
        r->playing = new_state == GST_STATE_PLAYING;
      }
      break;
    }
    case GST_MESSAGE_EOS:
      if (!r->eos_at) {
        r->eos_at = g_get_monotonic_time ();
        if (on_eos_settle (r) == G_SOURCE_CONTINUE)
          g_timeout_add (EOS_SETTLE_POLL_MS, on_eos_settle, r);
      }
      break;
    default:
      break;
  }
  g_clear_error (&err);
  g_free (debug);
  return G_SOURCE_CONTINUE;
}

/* Builds the pipeline, or says why it cannot and returns NULL. Without
 * GST_PARSE_FLAG_FATAL_ERRORS, a missing element or a failed link gives a
 * partial pipeline and the error only in the debug log: one that never
 * prerolls. */
static GstElement *
build_pipeline (const gchar * desc)
{
  GstParseContext *ctx = gst_parse_context_new ();
  GError *err = NULL;
  GstElement *e = gst_parse_launch_full (desc, ctx,
      GST_PARSE_FLAG_FATAL_ERRORS, &err);
  gchar **missing = gst_parse_context_get_missing_elements (ctx);

  if (!e || err) {
    g_printerr ("tt-launch: error: the pipeline description does not "
        "parse: %s\n", err ? err->message : "(no reason given)");
    for (gchar ** m = missing; m && *m; m++)
      g_printerr ("tt-launch: no element \"%s\" is installed "
          "(gst-inspect-1.0 %s; install the package of the GStreamer "
          "plugin that has it)\n", *m, *m);
    g_clear_object (&e);
  } else if (!GST_IS_PIPELINE (e)) {
    /* a description of one element */
    GstElement *pipeline = gst_pipeline_new (NULL);
    gst_bin_add (GST_BIN (pipeline), e);
    e = pipeline;
  }
  g_clear_error (&err);
  g_strfreev (missing);
  gst_parse_context_free (ctx);
  return e;
}

int
main (int argc, char **argv)
{
  Runner r = { 0 };
  gint every = 0;
  gdouble stall_timeout = DEFAULT_STALL_TIMEOUT;
  gchar *at = NULL, **steps = NULL, **rest = NULL;
  gboolean use_stdin = FALSE;
  GOptionEntry entries[] = {
    {"every", 0, 0, G_OPTION_ARG_INT, &every,
        "Apply the next --step every N buffers", "N"},
    {"at", 0, 0, G_OPTION_ARG_STRING, &at,
          "Element whose sink pad counts the buffers (default: labeler)",
        "NAME"},
    {"step", 0, 0, G_OPTION_ARG_STRING_ARRAY, &steps,
        "element.property=value[;...], applied in turn", "STEP"},
    {"stdin", 0, 0, G_OPTION_ARG_NONE, &use_stdin,
        "Read steps (or class numbers) from standard input", NULL},
    {"stall-timeout", 0, 0, G_OPTION_ARG_DOUBLE, &stall_timeout,
        "Fail when the pipeline makes no progress for this long "
          "(default 30; 0: wait for ever)", "SECONDS"},
    {G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_STRING_ARRAY, &rest, NULL,
        "PIPELINE-DESCRIPTION"},
    {NULL, 0, 0, 0, NULL, NULL, NULL},
  };
  /* no parameter string: the usage line takes PIPELINE-DESCRIPTION from
   * G_OPTION_REMAINING's entry */
  GOptionContext *ctx = g_option_context_new (NULL);
  GError *err = NULL;
  GstElement *target;
  GstPad *pad;
  GstBus *bus;
  gchar *desc;

  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_add_group (ctx, gst_init_get_option_group ());
  if (!g_option_context_parse (ctx, &argc, &argv, &err) || !rest
      || stall_timeout < 0) {
    g_printerr ("tt-launch: %s\n%s", err ? err->message : !rest ?
        "no pipeline description" : "--stall-timeout must be 0 or more",
        g_option_context_get_help (ctx, TRUE, NULL));
    return 2;
  }
  g_option_context_free (ctx);
  r.at = at ? at : "labeler";
  r.steps = steps;
  r.n_steps = steps ? g_strv_length (steps) : 0;
  r.every = every > 0 ? (guint) every : 0;
  r.stall_us = (gint64) (stall_timeout * G_USEC_PER_SEC);
  /* a quarter of the limit, so a stall is reported at most 25% late */
  r.tick_us = CLAMP (r.stall_us / 4, 10000, 500000);
  g_mutex_init (&r.lock);
  g_queue_init (&r.pending);
  r.watches = g_ptr_array_new_with_free_func (free_watch);
  watch_quark = g_quark_from_static_string ("tt-launch-pad-watch");

  desc = g_strjoinv (" ", rest);
  r.pipeline = build_pipeline (desc);
  g_free (desc);
  if (!r.pipeline)
    return 2;
  if ((r.every && r.n_steps) || use_stdin) {
    target = gst_bin_get_by_name (GST_BIN (r.pipeline), r.at);
    if (!target || !(pad = gst_element_get_static_pad (target, "sink"))) {
      g_printerr ("tt-launch: no element \"%s\" with a sink pad to count "
          "buffers at (name one with name=%s or use --at)\n", r.at, r.at);
      return 2;
    }
    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, on_buffer, &r, NULL);
    gst_object_unref (pad);
    gst_object_unref (target);
  }
  if (use_stdin) {
    GIOChannel *ch = g_io_channel_unix_new (0);
    g_io_add_watch (ch, G_IO_IN | G_IO_HUP, on_stdin, &r);
    g_io_channel_unref (ch);
  }
  r.loop = g_main_loop_new (NULL, FALSE);
  g_unix_signal_add (SIGINT, on_interrupt, &r);
  bus = gst_element_get_bus (r.pipeline);
  gst_bus_add_watch (bus, on_message, &r);
  gst_object_unref (bus);
  if (r.stall_us) {
    GList *elements = pipeline_elements (&r);
    for (GList * l = elements; l; l = l->next)
      watch_element (&r, l->data);
    g_list_free_full (elements, gst_object_unref);
    g_signal_connect (r.pipeline, "deep-element-added",
        G_CALLBACK (on_deep_element_added), &r);
    r.progress = g_get_monotonic_time ();
    g_timeout_add ((guint) (r.tick_us / 1000), on_tick, &r);
  }
  if (gst_element_set_state (r.pipeline, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE) {
    /* the error message is on the bus */
    r.status = 1;
    bus = gst_element_get_bus (r.pipeline);
    GstMessage *m = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
    if (m) {
      on_message (bus, m, &r);
      gst_message_unref (m);
    }
    gst_object_unref (bus);
  } else {
    g_main_loop_run (r.loop);
  }
  if (r.status != 0)
    g_thread_unref (g_thread_new ("teardown-guard", teardown_guard,
            GINT_TO_POINTER (r.status)));
  gst_element_set_state (r.pipeline, GST_STATE_NULL);
  gst_object_unref (r.pipeline);
  g_ptr_array_unref (r.watches);
  g_main_loop_unref (r.loop);
  g_queue_clear_full (&r.pending, g_free);
  g_strfreev (steps);
  g_strfreev (rest);
  g_free (at);
  return r.status;
}
