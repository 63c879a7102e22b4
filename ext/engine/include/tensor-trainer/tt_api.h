/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * TT_API marks the functions of the public API. The engine is compiled
 * with hidden visibility, so libtensor-trainer.so exports a function only
 * when its declaration says TT_API (tests/unit/check_exports.py checks the
 * headers, the linker's list ext/libtensor-trainer.map and the library's
 * exports against each other).
 */
#ifndef TT_API_H
#define TT_API_H

#if defined(__GNUC__) && __GNUC__ >= 4
#define TT_API __attribute__ ((visibility ("default")))
#else
#define TT_API
#endif

#endif
