/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tt_model_pool_peak (core/pool_peak.c): the pool at its busiest step,
 * by kind. On ResNet-8 at batch 32 (Adam) in fp32 and bf16: the kinds
 * sum to the live bytes, which the pool holds (and, its plan packing its
 * peak without holes, equal); Adam's state is
 * twice the trainable weights; bf16 moves kept activations into half-width stashes
 * and leaves weights and optimizer state as fp32 has them; an
 * uncompiled model reports step -1 and nothing live.
 */
#include "tt_test.h"
#include "tt_engine.h"

#include <stdio.h>
#include <string.h>

static char root[1024];

static tt_model *
open_resnet8 (const char *precision, bool compile)
{
  char path[1200];
  snprintf (path, sizeof path, "%s/tests/models/zoo_resnet8.ini", root);
  tt_error err;
  err.message[0] = 0;
  tt_model *m = tt_model_load_ini (path, &err);
  if (m && (tt_model_set_batch_size (m, 32, &err) ||
          tt_model_set_precision (m, precision, &err) ||
          (compile && tt_model_compile (m, &err)))) {
    tt_model_free (m);
    m = NULL;
  }
  CHECK (m != NULL, "zoo_resnet8.ini at %s: %s", precision, err.message);
  return m;
}

static uint64_t
kinds_sum (const tt_pool_peak * p)
{
  return p->inputs + p->activations + p->stashed + p->derivatives +
      p->weights + p->gradients + p->optimizer + p->scratch;
}

static void
test_resnet8 (void)
{
  tt_model *a = open_resnet8 ("fp32", true), *b = open_resnet8 ("bf16", true);
  if (!a || !b) {
    tt_model_free (a);
    tt_model_free (b);
    return;
  }
  tt_pool_peak pa, pb;
  tt_model_pool_peak (a, &pa);
  tt_model_pool_peak (b, &pb);
  tt_memory_info ma, mb;
  tt_model_memory_info (a, &ma);
  tt_model_memory_info (b, &mb);
  CHECK (pa.step >= 0 && pb.step >= 0, "a step: %d, %d", pa.step, pb.step);
  CHECK (kinds_sum (&pa) == pa.live_bytes && kinds_sum (&pb) == pb.live_bytes,
      "the kinds sum to the live bytes");
  CHECK (pa.live_bytes == ma.pool_bytes, "fp32: live %llu, pool %zu",
      (unsigned long long) pa.live_bytes, ma.pool_bytes);
  CHECK (pb.live_bytes == mb.pool_bytes, "bf16: live %llu, pool %zu",
      (unsigned long long) pb.live_bytes, mb.pool_bytes);
  /* (the batch normalizations' moving statistics have no state) */
  CHECK (pa.weights >= ma.weight_bytes && pa.optimizer > pa.weights &&
      pa.optimizer < 2 * pa.weights,
      "Adam's state (%llu) is twice the trainable weights (of %llu)",
      (unsigned long long) pa.optimizer, (unsigned long long) pa.weights);
  CHECK (pa.stashed == 0 && pb.stashed > 0, "stashed: fp32 %llu, bf16 %llu",
      (unsigned long long) pa.stashed, (unsigned long long) pb.stashed);
  CHECK (pb.activations < pa.activations, "fp32 activations: %llu -> %llu",
      (unsigned long long) pa.activations, (unsigned long long) pb.activations);
  /* (the busiest steps differ: derivatives are fp32 at both) */
  CHECK (pb.derivatives > 0 && pb.weights == pa.weights &&
      pb.optimizer == pa.optimizer, "weights and optimizer as fp32's");
  tt_model_free (a);
  tt_model_free (b);
}

static void
test_uncompiled (void)
{
  tt_model *m = open_resnet8 ("fp32", false);
  if (!m)
    return;
  tt_pool_peak p;
  memset (&p, 0xff, sizeof p);
  tt_model_pool_peak (m, &p);
  CHECK (p.step == -1 && p.live_bytes == 0 && kinds_sum (&p) == 0,
      "uncompiled: step %d, live %llu", p.step,
      (unsigned long long) p.live_bytes);
  tt_model_free (m);
}

int
main (int argc, char **argv)
{
  snprintf (root, sizeof root, "%s", argc > 1 ? argv[1] : ".");
  TT_TEST_RUN (test_resnet8);
  TT_TEST_RUN (test_uncompiled);
  return tt_test_summary ();
}
