/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * From parsed layer sections to an executable graph:
 *   1. realize implicit layers (activation=, flatten=, input_shape= on a
 *      non-input layer),
 *   2. resolve connections (previous section, input_layers, name(idx)),
 *   3. attach the loss (folding a final softmax/sigmoid into it),
 *   4. insert a multiout wherever an output is consumed more than once,
 *      and move each ReLU that only feeds a max pooling after it,
 *   5. sort topologically (ties in INI order, so sequential models keep
 *      their order), detecting cycles,
 *   6. infer shapes and where gradients flow.
 * Layers end up stored in that topological order; the execution order is
 * the planner's choice (plan.c).
 */
#include "tt_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

tt_layer *
tt_model_add_layer (tt_model * m, const char *name, const char *section,
    const tt_layer_ops * ops, tt_error * err)
{
  if (tt_model_find_layer (m, name) >= 0) {
    tt_fail (err, TT_ERR_INVALID, "%s: [%s]: layer name '%s' is used twice",
        m->path, section, name);
    return NULL;
  }
  /* callers pass names held in m->layers, which the realloc may move */
  char name_copy[TT_NAME_MAX], section_copy[TT_NAME_MAX];
  snprintf (name_copy, sizeof name_copy, "%s", name);
  snprintf (section_copy, sizeof section_copy, "%s", section);
  if (m->n_layers == m->cap_layers) {
    uint32_t cap = m->cap_layers ? m->cap_layers * 2 : 16;
    tt_layer *grown = realloc (m->layers, cap * sizeof *grown);
    if (!grown) {
      tt_fail (err, TT_ERR_NOMEM, "out of memory adding layer %s", name);
      return NULL;
    }
    m->layers = grown;
    m->cap_layers = cap;
  }
  tt_layer *l = &m->layers[m->n_layers];
  memset (l, 0, sizeof *l);
  snprintf (l->name, sizeof l->name, "%s", name_copy);
  snprintf (l->section, sizeof l->section, "%s", section_copy);
  l->ops = ops;
  l->creation = (int) m->n_layers++;
  l->n_outputs = ops->outputs ? ops->outputs : 1;
  l->trainable = true;
  l->order = -1;
  for (int i = 0; i < TT_MAX_IO; i++)
    l->in[i] = l->out[i] = l->in_deriv[i] = l->out_deriv[i] = -1;
  for (int i = 0; i < TT_MAX_SCRATCH; i++)
    l->scratch[i] = -1;
  return l;
}

int
tt_model_find_layer (const tt_model * m, const char *name)
{
  for (uint32_t i = 0; i < m->n_layers; i++)
    if (!strcmp (m->layers[i].name, name))
      return (int) i;
  return -1;
}

tt_layer *
tt_model_sole_consumer (tt_model * m, int index)
{
  if (m->layers[index].consumers[0] != 1)
    return NULL;
  for (uint32_t i = 0; i < m->n_layers; i++) {
    tt_layer *l = &m->layers[i];
    for (uint32_t k = 0; k < l->n_inputs; k++)
      if (l->inputs[k].layer == index && l->inputs[k].index == 0)
        return l->n_inputs == 1 ? l : NULL;
  }
  return NULL;
}

/* ---- 1. implicit layers ---------------------------------------------- */

/* Appends a one-input layer fed by the layer currently at index prev. */
static tt_layer *
graph_append_after (tt_model * m, int prev, const char *suffix,
    const tt_layer_ops * ops, tt_error * err)
{
  char name[TT_NAME_MAX], section[TT_NAME_MAX];
  snprintf (name, sizeof name, "%.63s/%.24s", m->layers[prev].name, suffix);
  snprintf (section, sizeof section, "%s", m->layers[prev].section);
  tt_layer *l = tt_model_add_layer (m, name, section, ops, err);
  if (!l)
    return NULL;
  l->n_inputs = 1;
  snprintf (l->inputs[0].name, TT_NAME_MAX, "%s", m->layers[prev].name);
  l->inputs[0].layer = prev;
  l->trainable = m->layers[prev].trainable;
  return l;
}

/* Rebuilds the layer list with the implicit layers in place. realized[i]
 * maps a section layer to the layer whose output its name stands for. */
static tt_status
graph_realize (tt_model * m, int **realized_out, tt_error * err)
{
  uint32_t n_sections = m->n_layers;
  tt_layer *sections = m->layers;
  int *realized = calloc (n_sections, sizeof *realized);
  int *head = calloc (n_sections, sizeof *head);
  if (!realized || !head) {
    free (realized);
    free (head);
    return tt_fail (err, TT_ERR_NOMEM, "out of memory");
  }
  m->layers = NULL;
  m->n_layers = m->cap_layers = 0;
  tt_status st = TT_OK;

  for (uint32_t i = 0; i < n_sections && st == TT_OK; i++) {
    tt_layer src = sections[i];
    const char *sec = src.section;
    tt_section s = { m->path, sec, m->dict };

    if (src.ops->role == TT_ROLE_INPUT) {
      if (!src.has_input_shape) {
        st = tt_section_error (&s, "input_shape", err, TT_ERR_INVALID,
            "missing key (an input layer needs its shape, e.g. 1:28:28)");
        break;
      }
      if (src.n_inputs) {
        st = tt_section_error (&s, "input_layers", err, TT_ERR_INVALID,
            "an input layer takes no input layers");
        break;
      }
    } else if (src.has_input_shape && src.n_inputs == 0) {
      /* nntrainer: input_shape on the first layer makes it a model input */
      char name[TT_NAME_MAX];
      snprintf (name, sizeof name, "%.63s/input", src.name);
      tt_layer *in = tt_model_add_layer (m, name, sec, &tt_input_layer_ops,
          err);
      if (!in) {
        st = err ? err->status : TT_ERR_NOMEM;
        break;
      }
      in->has_input_shape = true;
      in->input_shape = src.input_shape;
      src.n_inputs = 1;
      snprintf (src.inputs[0].name, TT_NAME_MAX, "%s", name);
      src.inputs[0].layer = (int) m->n_layers - 1;
    } else if (src.n_inputs == 0) {
      if (i == 0) {
        st = tt_section_error (&s, "input_shape", err, TT_ERR_INVALID,
            "missing key: the first layer has no input; give it "
            "input_shape or add an input layer before it");
        break;
      }
      /* the section above feeds it */
      src.n_inputs = 1;
      snprintf (src.inputs[0].name, TT_NAME_MAX, "%s", sections[i - 1].name);
      src.inputs[0].layer = -1;
    }

    tt_layer *l = tt_model_add_layer (m, src.name, sec, src.ops, err);
    if (!l) {
      st = err ? err->status : TT_ERR_NOMEM;
      break;
    }
    int creation = l->creation;
    *l = src;
    l->creation = creation;
    head[i] = creation;
    int last = creation;
    if (src.post_activation != TT_ACT_NONE) {
      tt_layer *a = graph_append_after (m, last, "activation_realized",
          &tt_activation_layer_ops, err);
      if (!a) {
        st = err ? err->status : TT_ERR_NOMEM;
        break;
      }
      a->p.act.fn = src.post_activation;
      a->p.act.clip_min = src.post_clip[0];
      a->p.act.clip_max = src.post_clip[1];
      last = a->creation;
    }
    if (src.post_flatten) {
      tt_layer *f = graph_append_after (m, last, "flatten_realized",
          &tt_flatten_layer_ops, err);
      if (!f) {
        st = err ? err->status : TT_ERR_NOMEM;
        break;
      }
      last = f->creation;
    }
    realized[i] = last;
  }

  /* names in input_layers refer to sections; map them to realized layers */
  for (uint32_t i = 0; i < n_sections && st == TT_OK; i++) {
    tt_layer *l = &m->layers[head[i]];
    tt_section s = { m->path, l->section, m->dict };
    for (uint32_t k = 0; k < l->n_inputs; k++) {
      tt_link *link = &l->inputs[k];
      if (link->layer >= 0)
        continue;
      int found = -1;
      for (uint32_t j = 0; j < n_sections; j++)
        if (!strcmp (sections[j].name, link->name))
          found = (int) j;
      if (found < 0) {
        /* an implicit input layer's name may be referenced too */
        int direct = tt_model_find_layer (m, link->name);
        if (direct < 0) {
          st = tt_section_error (&s, "input_layers", err, TT_ERR_INVALID,
              "no layer named '%s'", link->name);
          break;
        }
        link->layer = direct;
      } else {
        link->layer = realized[found];
      }
    }
  }
  /* an explicit multiout (and a layer whose ops say outputs_by_reference:
   * split) has one output per index its consumers name; every other
   * layer has one output */
  for (uint32_t i = 0; i < m->n_layers && st == TT_OK; i++)
    for (uint32_t k = 0; k < m->layers[i].n_inputs; k++) {
      const tt_link *link = &m->layers[i].inputs[k];
      tt_layer *p = &m->layers[link->layer];
      if ((p->ops->role == TT_ROLE_MULTIOUT || p->ops->outputs_by_reference)
          && link->index >= p->n_outputs)
        p->n_outputs = link->index + 1;
    }
  for (uint32_t i = 0; i < m->n_layers && st == TT_OK; i++)
    for (uint32_t k = 0; k < m->layers[i].n_inputs && st == TT_OK; k++) {
      const tt_layer *l = &m->layers[i];
      const tt_link *link = &l->inputs[k];
      const tt_layer *p = &m->layers[link->layer];
      tt_section s = { m->path, l->section, m->dict };
      if (link->index >= p->n_outputs)
        st = tt_section_error (&s, "input_layers", err, TT_ERR_INVALID,
            "'%s(%u)': [%s] has %u output(s)", link->name, link->index,
            p->section, p->n_outputs);
    }
  free (sections);
  free (head);
  if (st) {
    free (realized);
    return st;
  }
  *realized_out = realized;
  return TT_OK;
}

/* ---- 3. loss --------------------------------------------------------- */

static bool
graph_is_loss (const tt_layer * l)
{
  return l->ops->role == TT_ROLE_LOSS;
}

static void
graph_count_consumers (tt_model * m, const bool *dead)
{
  for (uint32_t i = 0; i < m->n_layers; i++)
    memset (m->layers[i].consumers, 0, sizeof m->layers[i].consumers);
  for (uint32_t i = 0; i < m->n_layers; i++) {
    if (dead && dead[i])
      continue;
    tt_layer *l = &m->layers[i];
    for (uint32_t k = 0; k < l->n_inputs; k++)
      m->layers[l->inputs[k].layer].consumers[l->inputs[k].index]++;
  }
}

static tt_status graph_sort (tt_model * m, const bool *dead, bool apply,
    tt_error * err);

/* Finds the single unconsumed output; the loss attaches there. */
static tt_status
graph_find_sink (tt_model * m, const bool *dead, int *sink, tt_error * err)
{
  int found = -1;
  graph_count_consumers (m, dead);
  for (uint32_t i = 0; i < m->n_layers; i++) {
    tt_layer *l = &m->layers[i];
    if (dead[i])
      continue;
    for (uint32_t o = 0; o < l->n_outputs; o++) {
      /* a later output of a layer with several (tt_layer_ops.outputs)
       * may go unread */
      if (l->consumers[o] || (o > 0 && l->ops->outputs > 1))
        continue;
      if (found >= 0)
        return tt_fail (err, TT_ERR_INVALID,
            "%s: [%s] and [%s] both end the model (their outputs feed no "
            "layer); a model has one output", m->path,
            m->layers[found].section, l->section);
      found = (int) i;
    }
  }
  if (found < 0) {
    /* every output is consumed: there is a cycle; the sort names it */
    tt_status st = graph_sort (m, dead, false, err);
    return st ? st : tt_fail (err, TT_ERR_INVALID,
        "%s: every layer output is consumed, so the graph has a cycle and "
        "no output", m->path);
  }
  *sink = found;
  return TT_OK;
}

static tt_status
graph_attach_loss (tt_model * m, bool *dead, tt_error * err)
{
  int sink = -1;
  tt_status st = graph_find_sink (m, dead, &sink, err);
  if (st)
    return st;
  /* a loss layer reads one input and ends the model */
  for (uint32_t i = 0; i < m->n_layers; i++) {
    const tt_layer *l = &m->layers[i];
    tt_section sec = { m->path, l->section, m->dict };
    if (dead[i] || !graph_is_loss (l))
      continue;
    if ((int) i != sink)
      return tt_section_error (&sec, NULL, err, TT_ERR_INVALID,
          "a %s loss layer must end the model, but its output feeds "
          "another layer", l->ops->type);
    if (l->n_inputs != 1)
      return tt_section_error (&sec, "input_layers", err, TT_ERR_INVALID,
          "a loss layer takes one input, not %u", l->n_inputs);
  }
  tt_layer *s = &m->layers[sink];
  const tt_layer_ops *ops = NULL;
  int loss_at = -1;

  if (graph_is_loss (s)) {
    if (m->loss != TT_LOSS_NONE)
      return tt_fail (err, TT_ERR_INVALID,
          "%s: [Model] loss is set and [%s] is a loss layer too; keep one",
          m->path, s->section);
    ops = s->ops;
    loss_at = sink;
    sink = s->inputs[0].layer;
  } else {
    switch (m->loss) {
      case TT_LOSS_NONE:
        return tt_fail (err, TT_ERR_INVALID,
            "%s: [Model] loss: missing key (mse, cross, cross_softmax, "
            "cross_sigmoid or kld)", m->path);
      case TT_LOSS_MSE:
        ops = &tt_mse_layer_ops;
        break;
      case TT_LOSS_CROSS_SOFTMAX:
        ops = &tt_cross_softmax_layer_ops;
        break;
      case TT_LOSS_CROSS_SIGMOID:
        ops = &tt_cross_sigmoid_layer_ops;
        break;
      case TT_LOSS_KLD:
        ops = &tt_kld_layer_ops;
        break;
      case TT_LOSS_CROSS:{
        tt_layer *a = &m->layers[sink];
        if (a->ops->role != TT_ROLE_ACTIVATION ||
            (a->p.act.fn != TT_ACT_SOFTMAX && a->p.act.fn != TT_ACT_SIGMOID))
          return tt_fail (err, TT_ERR_INVALID,
              "%s: [Model] loss: 'cross' needs softmax or sigmoid as the "
              "last activation, and [%s] ends the model without one",
              m->path, a->section);
        ops = a->p.act.fn == TT_ACT_SOFTMAX ? &tt_cross_softmax_layer_ops :
            &tt_cross_sigmoid_layer_ops;
        break;
      }
    }
  }

  /* cross losses apply their own softmax/sigmoid: fold the final one in */
  tt_layer *a = &m->layers[sink];
  if (a->ops->role == TT_ROLE_ACTIVATION &&
      ops->fused_activation != TT_ACT_NONE &&
      a->p.act.fn == ops->fused_activation) {
    dead[sink] = true;
    sink = a->inputs[0].layer;
  }

  tt_layer *loss;
  if (loss_at >= 0) {
    loss = &m->layers[loss_at];
  } else {
    char name[TT_NAME_MAX];
    snprintf (name, sizeof name, "%.63s/loss", m->layers[sink].name);
    loss = tt_model_add_layer (m, name, m->layers[sink].section, ops, err);
    if (!loss)
      return err ? err->status : TT_ERR_NOMEM;
    loss->n_inputs = 1;
  }
  loss->inputs[0].layer = sink;
  loss->inputs[0].index = 0;
  snprintf (loss->inputs[0].name, TT_NAME_MAX, "%s", m->layers[sink].name);
  return TT_OK;
}

/* ---- 4. multiout ----------------------------------------------------- */

static tt_status
graph_insert_multiouts (tt_model * m, bool **dead_io, tt_error * err)
{
  graph_count_consumers (m, *dead_io);
  uint32_t n = m->n_layers;
  for (uint32_t i = 0; i < n; i++) {
    for (uint32_t o = 0; o < m->layers[i].n_outputs; o++) {
      uint32_t count = m->layers[i].consumers[o];
      if ((*dead_io)[i] || count <= 1)
        continue;
      if (count > TT_MAX_IO)
        return tt_fail (err, TT_ERR_INVALID,
            "%s: [%s]: output consumed by %u layers (at most %d)", m->path,
            m->layers[i].section, count, TT_MAX_IO);
      char name[TT_NAME_MAX];
      if (m->layers[i].n_outputs > 1)
        snprintf (name, sizeof name, "%.63s/multiout%u", m->layers[i].name, o);
      else
        snprintf (name, sizeof name, "%.63s/multiout", m->layers[i].name);
      tt_layer *mo = tt_model_add_layer (m, name, m->layers[i].section,
          &tt_multiout_layer_ops, err);
      if (!mo)
        return err ? err->status : TT_ERR_NOMEM;
      bool *grown = realloc (*dead_io, m->cap_layers * sizeof *grown);
      if (!grown)
        return tt_fail (err, TT_ERR_NOMEM, "out of memory");
      *dead_io = grown;
      (*dead_io)[mo->creation] = false;
      int mo_id = mo->creation;
      mo->n_inputs = 1;
      mo->inputs[0].layer = (int) i;
      mo->inputs[0].index = o;
      snprintf (mo->inputs[0].name, TT_NAME_MAX, "%s", m->layers[i].name);
      mo->n_outputs = count;
      mo->trainable = m->layers[i].trainable;
      uint32_t k = 0;
      for (uint32_t c = 0; c < m->n_layers; c++) {
        tt_layer *cl = &m->layers[c];
        if ((*dead_io)[c] || (int) c == mo_id)
          continue;
        for (uint32_t j = 0; j < cl->n_inputs; j++)
          if (cl->inputs[j].layer == (int) i && cl->inputs[j].index == o) {
            cl->inputs[j].layer = mo_id;
            cl->inputs[j].index = k++;
          }
      }
    }
  }
  return TT_OK;
}

/* Max pooling commutes with ReLU, which never decreases: relu (max x) =
 * max (relu x). The gradients agree too: when the window's max is
 * positive, both route it to the same element (ReLU keeps the order of
 * positive values and the ties among them); otherwise both are 0. So a
 * ReLU whose only consumer is a max pooling runs after it instead, on a
 * quarter of the values for 2x2 windows, forward and backward; the
 * results are the same bit for bit. Only the engine's graph changes: the
 * INI, the BIN layout and the layer names stay. */
static void
graph_pool_before_relu (tt_model * m, const bool *dead)
{
  graph_count_consumers (m, dead);
  for (uint32_t i = 0; i < m->n_layers; i++) {
    tt_layer *a = &m->layers[i];
    if (dead[i] || a->ops->role != TT_ROLE_ACTIVATION ||
        a->p.act.fn != TT_ACT_RELU || a->n_inputs != 1 || a->consumers[0] != 1)
      continue;
    int q = -1;
    for (uint32_t c = 0; c < m->n_layers && q < 0; c++)
      if (!dead[c] && m->layers[c].n_inputs == 1 &&
          m->layers[c].inputs[0].layer == (int) i)
        q = (int) c;
    if (q < 0)
      continue;
    tt_layer *pool = &m->layers[q];
    if (!pool->ops->commutes_with_relu ||
        !pool->ops->commutes_with_relu (pool) || pool->n_outputs != 1)
      continue;
    /* producer -> relu -> pool -> consumers  becomes
     * producer -> pool -> relu -> consumers */
    for (uint32_t c = 0; c < m->n_layers; c++) {
      tt_layer *cl = &m->layers[c];
      if (dead[c])
        continue;
      for (uint32_t k = 0; k < cl->n_inputs; k++)
        if (cl->inputs[k].layer == q) {
          cl->inputs[k].layer = (int) i;
          snprintf (cl->inputs[k].name, TT_NAME_MAX, "%s", a->name);
        }
    }
    pool->inputs[0] = a->inputs[0];
    a->inputs[0].layer = q;
    a->inputs[0].index = 0;
    snprintf (a->inputs[0].name, TT_NAME_MAX, "%s", pool->name);
  }
}

/* ---- 5. topological order -------------------------------------------- */

/* Orders the layers topologically (when apply) or only checks that they
 * can be (a cycle is an error either way). */
static tt_status
graph_sort (tt_model * m, const bool *dead, bool apply, tt_error * err)
{
  uint32_t n = m->n_layers;
  uint32_t *indeg = calloc (n, sizeof *indeg);
  int *order = malloc (n * sizeof *order);
  int *position = malloc (n * sizeof *position);
  bool *done = calloc (n, sizeof *done);
  tt_layer *sorted = malloc (n * sizeof *sorted);
  tt_status st = TT_OK;
  if (!indeg || !order || !position || !done || !sorted) {
    st = tt_fail (err, TT_ERR_NOMEM, "out of memory");
    goto out;
  }
  uint32_t alive = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (dead[i])
      continue;
    alive++;
    indeg[i] = m->layers[i].n_inputs;
  }
  /* Kahn's algorithm, always taking the earliest-created ready layer */
  uint32_t count = 0;
  while (count < alive) {
    int pick = -1;
    for (uint32_t i = 0; i < n; i++)
      if (!dead[i] && !done[i] && indeg[i] == 0) {
        pick = (int) i;
        break;
      }
    if (pick < 0) {
      /* each layer left waits for an input left: walking up such inputs
       * n times ends on a layer of the cycle */
      int at = -1;
      for (uint32_t i = 0; i < n && at < 0; i++)
        if (!dead[i] && !done[i])
          at = (int) i;
      for (uint32_t step = 0; step < n; step++) {
        const tt_layer *l = &m->layers[at];
        for (uint32_t k = 0; k < l->n_inputs; k++)
          if (!done[l->inputs[k].layer]) {
            at = l->inputs[k].layer;
            break;
          }
      }
      st = tt_fail (err, TT_ERR_INVALID,
          "%s: [%s] input_layers: the layers form a cycle through '%s'",
          m->path, m->layers[at].section, m->layers[at].name);
      goto out;
    }
    done[pick] = true;
    position[pick] = (int) count;
    order[count++] = pick;
    for (uint32_t i = 0; i < n; i++) {
      if (dead[i] || done[i])
        continue;
      for (uint32_t k = 0; k < m->layers[i].n_inputs; k++)
        if (m->layers[i].inputs[k].layer == pick)
          indeg[i]--;
    }
  }
  if (!apply)
    goto out;
  for (uint32_t j = 0; j < count; j++) {
    sorted[j] = m->layers[order[j]];
    sorted[j].order = (int) j;
    for (uint32_t k = 0; k < sorted[j].n_inputs; k++)
      sorted[j].inputs[k].layer = position[sorted[j].inputs[k].layer];
  }
  free (m->layers);
  m->layers = sorted;
  sorted = NULL;
  m->n_layers = m->cap_layers = count;
out:
  free (indeg);
  free (order);
  free (position);
  free (done);
  free (sorted);
  return st;
}

/* ---- 6. shapes and gradient flow ------------------------------------- */

static tt_status
graph_infer (tt_model * m, tt_error * err)
{
  m->n_inputs = 0;
  for (uint32_t i = 0; i < m->n_layers; i++) {
    tt_layer *l = &m->layers[i];
    for (uint32_t k = 0; k < l->n_inputs; k++) {
      tt_layer *p = &m->layers[l->inputs[k].layer];
      if (l->inputs[k].index >= p->n_outputs) {
        tt_section s = { m->path, l->section, m->dict };
        return tt_section_error (&s, "input_layers", err, TT_ERR_INVALID,
            "'%s(%u)': [%s] has %u output(s)", l->inputs[k].name,
            l->inputs[k].index, p->section, p->n_outputs);
      }
      l->in_dims[k] = p->out_dims[l->inputs[k].index];
    }
    if (l->ops->role == TT_ROLE_INPUT) {
      if (m->n_inputs == TT_MAX_IO)
        return tt_fail (err, TT_ERR_INVALID, "%s: more than %d inputs",
            m->path, TT_MAX_IO);
      m->input_layers[m->n_inputs++] = (int) i;
    }
    if (graph_is_loss (l))
      m->loss_layer = (int) i;
    struct tt_init_owner owner = { m, (int) i };
    const tt_init_ctx c = { m->path, m->batch_size, &owner };
    tt_status st = l->ops->infer (&c, l, err);
    if (st)
      return st;
    for (uint32_t o = 0; o < l->n_outputs; o++)
      if (tt_dims_count (l->out_dims[o]) > (1u << 28))
        return tt_fail (err, TT_ERR_INVALID,
            "%s: [%s]: output of %u:%u:%u is larger than %u elements",
            m->path, l->section, l->out_dims[o].c, l->out_dims[o].h,
            l->out_dims[o].w, 1u << 28);
  }

  tt_status cst = tt_train_choice_apply (m, err);
  if (cst)
    return cst;
  for (uint32_t i = 0; i < m->n_layers; i++) {
    tt_layer *l = &m->layers[i];
    bool own = false;
    for (uint32_t w = 0; w < l->n_weights; w++)
      own |= l->weights[w].trainable && !m->inference;
    bool upstream = false;
    for (uint32_t k = 0; k < l->n_inputs; k++)
      upstream |= m->layers[l->inputs[k].layer].grad_flows;
    l->needs_derivative = upstream;
    l->grad_flows = own || upstream ||
        (l->ops->role == TT_ROLE_INPUT && m->force_input_derivative);
    /* a type that learns without gradients (centroid_knn) passes none */
    if (upstream && !l->ops->calc_derivative) {
      tt_section s = { m->path, l->section, m->dict };
      return tt_section_error (&s, NULL, err, TT_ERR_INVALID, "a %s layer "
          "passes no derivative back, and a trainable layer comes before "
          "it: set trainable = false on the layers before it", l->ops->type);
    }
  }
  return TT_OK;
}

/* The types that read several inputs, for messages: "addition and
 * concat". */
static void
graph_several_inputs (char *out, size_t size)
{
  uint32_t n = 0, total = 0;
  const tt_layer_ops *ops;
  for (uint32_t i = 0; (ops = tt_layer_ops_at (i)); i++)
    total += ops->max_inputs > 1;
  out[0] = '\0';
  for (uint32_t i = 0; (ops = tt_layer_ops_at (i)); i++) {
    if (ops->max_inputs <= 1)
      continue;
    size_t len = strlen (out);
    snprintf (out + len, size - len, "%s%s", n == 0 ? "" : n + 1 == total ?
        " and " : ", ", ops->type);
    n++;
  }
}

/* Only the types with max_inputs above 1 (addition, concat) read several
 * inputs; the others read input 0, so a second input would never get its
 * derivative. */
static tt_status
graph_check_inputs (tt_model * m, tt_error * err)
{
  for (uint32_t i = 0; i < m->n_layers; i++) {
    const tt_layer *l = &m->layers[i];
    tt_section sec = { m->path, l->section, m->dict };
    if (l->n_inputs > 1 && l->n_inputs > l->ops->max_inputs) {
      char several[128];
      graph_several_inputs (several, sizeof several);
      return tt_section_error (&sec, "input_layers", err, TT_ERR_INVALID,
          "a %s layer takes one input, not %u (only %s take several)",
          l->ops->type, l->n_inputs, several);
    }
  }
  return TT_OK;
}

tt_status
tt_graph_build (tt_model * m, tt_error * err)
{
  int *realized = NULL;
  bool *dead = NULL;
  tt_status st = graph_realize (m, &realized, err);
  if (st)
    return st;
  free (realized);

  dead = calloc (m->cap_layers + 1, sizeof *dead);
  if (!dead)
    return tt_fail (err, TT_ERR_NOMEM, "out of memory");
  /* attaching the loss may add a layer: keep the flags array in step */
  if ((st = graph_attach_loss (m, dead, err)))
    goto out;
  bool *grown = realloc (dead, (m->cap_layers + 1) * sizeof *grown);
  if (!grown) {
    st = tt_fail (err, TT_ERR_NOMEM, "out of memory");
    goto out;
  }
  dead = grown;
  if ((st = graph_insert_multiouts (m, &dead, err)))
    goto out;
  graph_pool_before_relu (m, dead);
  if ((st = graph_sort (m, dead, true, err)) ||
      (st = graph_check_inputs (m, err)) || (st = graph_infer (m, err)))
    goto out;
out:
  free (dead);
  return st;
}
