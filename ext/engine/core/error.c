/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "tt_internal.h"

#include <stdio.h>

tt_status
tt_fail (tt_error * err, tt_status status, const char *fmt, ...)
{
  if (err) {
    va_list ap;
    va_start (ap, fmt);
    vsnprintf (err->message, sizeof err->message, fmt, ap);
    va_end (ap);
    err->status = status;
  }
  return status;
}

const char *
tt_status_name (tt_status status)
{
  switch (status) {
    case TT_OK:
      return "ok";
    case TT_ERR_IO:
      return "i/o error";
    case TT_ERR_PARSE:
      return "parse error";
    case TT_ERR_INVALID:
      return "invalid model";
    case TT_ERR_NOMEM:
      return "out of memory";
    case TT_ERR_STATE:
      return "wrong state";
    case TT_ERR_NUMERIC:
      return "numeric fault";
  }
  return "unknown status";
}
