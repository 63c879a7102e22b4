/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tt-launch: runs a gst-launch pipeline description and changes element
 * properties while it plays, on a schedule of buffers or from standard
 * input, so that a live source can be labelled without writing a program
 * (camera-train.sh switches videotestsrc patterns and tensor_labeler's
 * label together with it).
 *
 *   tt-launch [--every N] [--at NAME] [--step STEP]... [--stdin]
 *             PIPELINE-DESCRIPTION...
 *
 *   STEP     "element.property=value[;element.property=value...]"
 *   --every  apply the next --step (round robin) every N buffers that reach
 *            the sink pad of the element NAME (--at, default "labeler")
 *   --stdin  read steps from standard input, one per line; a line holding
 *            only an integer K means "NAME.label=K" (a key press per class)
 *
 * A step is applied in the streaming thread, just before a buffer enters
 * NAME, and that buffer is dropped: elements upstream of NAME in the same
 * thread (no queue between) make the next buffer with the new settings, so
 * no frame carries a stale label. The tool prints the element messages of
 * tensor_trainer and tensor_planner, warnings and errors as key=value lines,
 * turns Ctrl-C into EOS (the trainer saves its model before the pipeline
 * ends), and exits 0 after EOS, 1 after an error.
 */
#include <gst/gst.h>
#include <glib-unix.h>
#include <stdio.h>
#include <string.h>

typedef struct
{
  GstElement *pipeline;
  GMainLoop *loop;
  gchar **steps;                /* round robin */
  guint n_steps, next_step;
  guint every;
  guint64 count;
  GMutex lock;                  /* guards pending */
  GQueue pending;               /* steps from stdin, applied at a buffer */
  const gchar *at;
  gint status;
} Runner;

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
  g_printerr ("tt-launch: interrupt: sending EOS (the model is saved)\n");
  gst_element_send_event (r->pipeline, gst_event_new_eos ());
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
    case GST_MESSAGE_EOS:
      g_print ("eos\n");
      g_main_loop_quit (r->loop);
      break;
    default:
      break;
  }
  g_clear_error (&err);
  g_free (debug);
  return G_SOURCE_CONTINUE;
}

int
main (int argc, char **argv)
{
  Runner r = { 0 };
  gint every = 0;
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
    {G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_STRING_ARRAY, &rest, NULL,
        "PIPELINE-DESCRIPTION"},
    {NULL, 0, 0, 0, NULL, NULL, NULL},
  };
  GOptionContext *ctx = g_option_context_new ("PIPELINE-DESCRIPTION");
  GError *err = NULL;
  GstElement *target;
  GstPad *pad;
  GstBus *bus;
  gchar *desc;

  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_add_group (ctx, gst_init_get_option_group ());
  if (!g_option_context_parse (ctx, &argc, &argv, &err) || !rest) {
    g_printerr ("tt-launch: %s\n%s", err ? err->message :
        "no pipeline description", g_option_context_get_help (ctx, TRUE,
            NULL));
    return 2;
  }
  g_option_context_free (ctx);
  r.at = at ? at : "labeler";
  r.steps = steps;
  r.n_steps = steps ? g_strv_length (steps) : 0;
  r.every = every > 0 ? (guint) every : 0;
  g_mutex_init (&r.lock);
  g_queue_init (&r.pending);

  desc = g_strjoinv (" ", rest);
  r.pipeline = gst_parse_launch (desc, &err);
  g_free (desc);
  if (!r.pipeline) {
    g_printerr ("tt-launch: %s\n", err->message);
    return 2;
  }
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
  gst_element_set_state (r.pipeline, GST_STATE_NULL);
  gst_object_unref (r.pipeline);
  g_main_loop_unref (r.loop);
  g_queue_clear_full (&r.pending, g_free);
  g_strfreev (steps);
  g_strfreev (rest);
  g_free (at);
  return r.status;
}
