/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What test_federation.sh needs besides the aggregator and the trainers:
 *
 *   fed_tool encode MODEL ROUND SAMPLES ID OUT [nan|huge|""] [SEED]
 *       MODEL's initial weights (of SEED) as an update message; with
 *       "nan" one
 *       weight made NaN and every checksum (envelope and bundle) made
 *       right again, so that only the finiteness check can refuse it;
 *       with "huge" the weights times 1000
 *   fed_tool publish URL TOPIC FILE...
 *       publishes the files (QoS 1) and waits for the broker's
 *       acknowledgements; the environment's FED_TOOL_ID (MQTT client id),
 *       FED_TOOL_CREDENTIALS, FED_TOOL_CA, FED_TOOL_CERT, FED_TOOL_KEY
 *       are tt_fed_mqtt_options' fields; FED_TOOL_WAIT_MS: how long to
 *       wait for the connection (default 5000)
 */
#include "fed_mqtt.h"
#include "tt_bundle.h"
#include "tt_fed.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static uint32_t
get32 (const unsigned char *p)
{
  return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 |
      (uint32_t) p[3] << 24;
}

static void
put32 (unsigned char *p, uint32_t v)
{
  for (int i = 0; i < 4; i++)
    p[i] = (unsigned char) (v >> (8 * i));
}

static int
poison (unsigned char *m, size_t len)
{
  tt_bundle_info info;
  tt_error err = { 0 };
  memset (&info, 0, sizeof info);
  if (tt_bundle_inspect_memory (m + 128, len - 128, "b", &info, &err) != TT_OK) {
    fprintf (stderr, "fed_tool: %s\n", err.message);
    return 1;
  }
  int done = 0;
  for (uint32_t s = 0; s < info.n_sections; s++) {
    tt_bundle_section_info *sec = &info.sections[s];
    if (sec->type != TT_BUNDLE_SECTION_WEIGHTS || (sec->flags & 1))
      continue;
    unsigned char *data = m + 128 + sec->offset;
    float q = NAN;
    memcpy (data + 4 * 7, &q, sizeof q);
    uint32_t fresh = (uint32_t) crc32 (0, data, (uInt) sec->length);
    unsigned char *bh = m + 128 + 24;
    uint32_t hlen = get32 (m + 128 + 12);
    for (size_t at = 0; at + 4 <= hlen; at++)
      if (get32 (bh + at) == sec->crc32_stored) {
        put32 (bh + at, fresh);
        done = 1;
        break;
      }
    put32 (m + 128 + 16, (uint32_t) crc32 (0, bh, hlen));
  }
  tt_bundle_info_clear (&info);
  put32 (m + 120, (uint32_t) crc32 (0, m + 128, (uInt) (len - 128)));
  put32 (m + 124, (uint32_t) crc32 (0, m, 124));
  if (!done)
    fprintf (stderr, "fed_tool: no weight section checksum found\n");
  return !done;
}

static int
encode (char **argv)
{
  tt_open_options oo;
  memset (&oo, 0, sizeof oo);
  oo.inference = true;
  oo.batch_size = 1;
  oo.plan_mode = TT_PLAN_REPLAN;
  if (argv[5] && argv[6]) {
    oo.has_seed = true;
    oo.seed = strtoull (argv[6], NULL, 10);
  }
  tt_error err = { 0 };
  tt_model *m = tt_model_open (argv[0], &oo, NULL, &err);
  if (!m) {
    fprintf (stderr, "fed_tool: %s\n", err.message);
    return 1;
  }
  tt_fed_header h;
  memset (&h, 0, sizeof h);
  h.kind = TT_FED_UPDATE;
  h.round = (uint32_t) strtoul (argv[1], NULL, 10);
  h.samples = strtoull (argv[2], NULL, 10);
  snprintf (h.client_id, sizeof h.client_id, "%s", argv[3]);
  void *msg;
  size_t len;
  int rc = 1;
  if (argv[5] && !strcmp (argv[5], "huge")) {
    size_t n = tt_model_weight_floats (m);
    float *w = malloc (n * sizeof (float));
    if (!w || tt_model_export_weights (m, w, n, &err) != TT_OK)
      return 1;
    for (size_t i = 0; i < n; i++)
      w[i] *= 1000.0f;
    tt_model_import_weights (m, w, n, &err);
    free (w);
  }
  if (tt_fed_encode (m, &h, &msg, &len, &err) != TT_OK)
    fprintf (stderr, "fed_tool: %s\n", err.message);
  else {
    rc = argv[5] && !strcmp (argv[5], "nan") ? poison (msg, len) : 0;
    if (!rc && tt_fed_write_file (argv[4], msg, len, &err) != TT_OK) {
      fprintf (stderr, "fed_tool: %s\n", err.message);
      rc = 1;
    }
    free (msg);
  }
  tt_model_free (m);
  return rc;
}

static int
publish (int argc, char **argv)
{
  tt_fed_mqtt_options o;
  memset (&o, 0, sizeof o);
  o.url = argv[0];
  /* a device of the secure test: FED_TOOL_ID, _CREDENTIALS, _CA, _CERT,
   * _KEY */
  o.client_id = getenv ("FED_TOOL_ID") ? getenv ("FED_TOOL_ID") : "fed-tool";
  o.credentials = getenv ("FED_TOOL_CREDENTIALS");
  o.ca = getenv ("FED_TOOL_CA");
  o.cert = getenv ("FED_TOOL_CERT");
  o.key = getenv ("FED_TOOL_KEY");
  tt_error err = { 0 };
  tt_fed_mqtt *m = tt_fed_mqtt_new (&o, NULL, &err);
  const char *wait = getenv ("FED_TOOL_WAIT_MS");
  if (!m || tt_fed_mqtt_wait_connected (m, wait ? atoi (wait) : 5000,
          &err) != TT_OK) {
    fprintf (stderr, "fed_tool: %s\n", err.message);
    tt_fed_mqtt_free (m);
    return 1;
  }
  int rc = 0;
  for (int i = 2; i < argc && !rc; i++) {
    void *data;
    size_t len;
    if (tt_fed_read_file (argv[i], (size_t) 1 << 30, &data, &len,
            &err) != TT_OK
        || tt_fed_mqtt_publish (m, argv[1], data, len, false, &err) != TT_OK) {
      fprintf (stderr, "fed_tool: %s\n", err.message);
      rc = 1;
    }
    free (data);
  }
  if (!rc && !tt_fed_mqtt_flush (m, 10000)) {
    fprintf (stderr, "fed_tool: not acknowledged\n");
    rc = 1;
  }
  tt_fed_mqtt_free (m);
  return rc;
}

int
main (int argc, char **argv)
{
  if (argc >= 7 && !strcmp (argv[1], "encode"))
    return encode (argv + 2);
  if (argc >= 5 && !strcmp (argv[1], "publish"))
    return publish (argc - 2, argv + 2);
  fprintf (stderr,
      "usage: fed_tool encode MODEL ROUND SAMPLES ID OUT "
      "[nan|huge|\"\"] [SEED]" "\n       fed_tool publish URL TOPIC FILE...\n");
  return 2;
}
