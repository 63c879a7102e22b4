/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The canary of the leaks-tracer runs (tests/gst/meson.build): leaks a
 * buffer and a caps on purpose, so under GST_TRACERS=leaks it must fail
 * (meson: should_fail). If it passes, the tracer did not load and the
 * *_leaks runs of the element tests check nothing.
 */
#include <gst/check/gstcheck.h>

GST_START_TEST (test_leak_on_purpose)
{
  GstBuffer *buf = gst_buffer_new_allocate (NULL, 16, NULL);
  GstCaps *caps = gst_caps_from_string ("other/tensors,format=flexible");
  fail_unless (buf != NULL && caps != NULL);
  /* neither is unreffed */
}

GST_END_TEST;

static Suite *
leaks_canary_suite (void)
{
  Suite *s = suite_create ("leaks_canary");
  TCase *tc = tcase_create ("general");
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_leak_on_purpose);
  return s;
}

GST_CHECK_MAIN (leaks_canary);
