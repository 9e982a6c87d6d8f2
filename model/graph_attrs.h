/*
 * The attribute readers of the graph op table (model/graph_attrs.c), one
 * per kind of row in model/graph_ops.c: the parse of pasci_graph_op
 * (graph_ops.h). Each fills what its ops use and returns PASCO_EINVAL
 * with pasci_model_fail naming at and the attribute on a bad one.
 */
#ifndef PASCI_GRAPH_ATTRS_H
#define PASCI_GRAPH_ATTRS_H

#include "graph_ops.h"

/* transpose_a, transpose_b (b[0], b[1]; false when absent) */
int pasci_graph_parse_matmul(
    const cJSON *node, pasci_graph_attrs *a, const char *at);
/* axes: two integers (list2) */
int pasci_graph_parse_batch_dot(
    const cJSON *node, pasci_graph_attrs *a, const char *at);
/* axis: an integer or a list (list), or null or absent: every axis (all);
 * keepdims (b[0]) */
int pasci_graph_parse_reduce(
    const cJSON *node, pasci_graph_attrs *a, const char *at);
/* axis (required) */
int pasci_graph_parse_axis(
    const cJSON *node, pasci_graph_attrs *a, const char *at);
/* axis, -1 when absent */
int pasci_graph_parse_axis_last(
    const cJSON *node, pasci_graph_attrs *a, const char *at);
/* axis, 0 when absent */
int pasci_graph_parse_gather(
    const cJSON *node, pasci_graph_attrs *a, const char *at);
/* shape (list) */
int pasci_graph_parse_reshape(
    const cJSON *node, pasci_graph_attrs *a, const char *at);
/* perm (list); absent: the axes reversed (all) */
int pasci_graph_parse_transpose(
    const cJSON *node, pasci_graph_attrs *a, const char *at);
/* begin (list), size (list2), of one length */
int pasci_graph_parse_slice(
    const cJSON *node, pasci_graph_attrs *a, const char *at);
/* depth (axis), 0 or more */
int pasci_graph_parse_one_hot(
    const cJSON *node, pasci_graph_attrs *a, const char *at);
/* min, max (f[0], f[1]), min <= max */
int pasci_graph_parse_clip(
    const cJSON *node, pasci_graph_attrs *a, const char *at);
/* axis; epsilon (f[0], 1e-12 when absent), 0 or more */
int pasci_graph_parse_l2_normalize(
    const cJSON *node, pasci_graph_attrs *a, const char *at);
/* rate (f[0]) in [0, 1) */
int pasci_graph_parse_dropout(
    const cJSON *node, pasci_graph_attrs *a, const char *at);
/* from_logits (b[0]; false when absent) */
int pasci_graph_parse_logits(
    const cJSON *node, pasci_graph_attrs *a, const char *at);

#endif
