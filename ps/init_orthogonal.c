/*
 * Keras's Orthogonal initializer on a ps (include/pasco/initializer.h):
 * the whole [max(r, c), min(r, c)] normal matrix is drawn from (seed,
 * element), Householder-reduced to its QR decomposition, and Q's columns
 * take the signs of R's diagonal (so Q is the one of a positive-diagonal
 * R, the same for any QR algorithm); each shard keeps its rows of gain
 * times Q, or of Q transposed when r < c. Every shard computes the whole,
 * so the values do not depend on the sharding. Pure; thread-safe.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "initializer_impl.h"

/* Into q (m x n, row-major, then n more doubles of scratch): the Q of the
 * QR decomposition of a (m x n, m >= n; destroyed), its columns' signs
 * those of R's diagonal. v: m x n doubles of scratch (the reflectors). */
static void
householder_q(double *a, int64_t m, int64_t n, double *v, double *q)
{
	double *sgn = q + m * n; /* n signs of R's diagonal, after q */
	for (int64_t k = 0; k < n; k++) {
		double *vk = v + k * m, norm = 0, vv = 0;
		for (int64_t i = k; i < m; i++) {
			vk[i] = a[i * n + k];
			norm += vk[i] * vk[i];
		}
		norm        = sqrt(norm);
		double alph = vk[k] > 0 ? -norm : norm; /* R's diagonal */
		sgn[k]      = alph < 0 ? -1 : 1;
		vk[k] -= alph;
		for (int64_t i = k; i < m; i++) {
			vv += vk[i] * vk[i];
		}
		if (vv == 0) { /* a zero column: H is the identity */
			continue;
		}
		for (int64_t j = k; j < n; j++) {
			double d = 0;
			for (int64_t i = k; i < m; i++) {
				d += vk[i] * a[i * n + j];
			}
			d = 2 * d / vv;
			for (int64_t i = k; i < m; i++) {
				a[i * n + j] -= d * vk[i];
			}
		}
		for (int64_t i = k; i < m; i++) {
			vk[i] /= sqrt(vv);
		}
	}
	/* Q = H_0 ... H_{n-1} [I; 0] */
	memset(q, 0, (size_t) (m * n) * sizeof(*q));
	for (int64_t i = 0; i < n; i++) {
		q[i * n + i] = 1;
	}
	for (int64_t k = n - 1; k >= 0; k--) {
		const double *vk = v + k * m;
		for (int64_t j = 0; j < n; j++) {
			double d = 0;
			for (int64_t i = k; i < m; i++) {
				d += vk[i] * q[i * n + j];
			}
			for (int64_t i = k; i < m; i++) {
				q[i * n + j] -= 2 * d * vk[i];
			}
		}
	}
	for (int64_t i = 0; i < m; i++) {
		for (int64_t j = 0; j < n; j++) {
			q[i * n + j] *= sgn[j];
		}
	}
}

int
pasci_init_orthogonal(const pasco_initializer *in, pasco_tensor *t,
    int32_t rank, const int64_t *shape, int64_t row_offset)
{
	int64_t r = 1, c, m, n;
	double *a, *v, *q;
	if (rank < 2) {
		return PASCO_EINVAL;
	}
	for (int32_t i = 0; i < rank - 1; i++) {
		r *= shape[i];
	}
	c = shape[rank - 1];
	m = r > c ? r : c;
	n = r > c ? c : r;
	if (n < 1 || (double) m * (double) n * (double) n >
	                 (double) PASCO_INIT_ORTHOGONAL_MAX) {
		return PASCO_EINVAL;
	}
	a = malloc((size_t) (m * n) * sizeof(*a));
	v = malloc((size_t) (m * n) * sizeof(*v));
	q = malloc((size_t) (m * n + n) * sizeof(*q));
	if (a == NULL || v == NULL || q == NULL) {
		free(a);
		free(v);
		free(q);
		return PASCO_ENOMEM;
	}
	for (int64_t g = 0; g < m * n; g++) {
		a[g] = pasci_init_std_normal(in->seed, (uint64_t) g, 0);
	}
	householder_q(a, m, n, v, q);
	/* element g of the whole [r, c]: Q[i][j], or Q[j][i] when r < c */
	int64_t first =
	    row_offset * (t->count / (t->shape[0] ? t->shape[0] : 1));
	for (int64_t e = 0; e < t->count; e++) {
		int64_t g = first + e, i = g / c, j = g % c;
		pasco_tensor_set(
		    t, e, in->scale * (r >= c ? q[i * n + j] : q[j * n + i]));
	}
	free(a);
	free(v);
	free(q);
	return PASCO_OK;
}
