/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Calls for the engine's own tests, not part of the public API (not
 * exported by the shared library, not installed): they reach into what
 * a model computes.
 */
#ifndef TT_TEST_HOOKS_H
#define TT_TEST_HOOKS_H

#include "tt_engine.h"

/* Before compile: also compute the derivative of the loss with respect to
 * the input layers' outputs (normally skipped: nothing needs it), for
 * finite-difference checks of the first layers (test_gradcheck,
 * test_golden). Defined in core/model.c. */
tt_status tt_model_request_input_derivative (tt_model * model, tt_error * err);

#endif
