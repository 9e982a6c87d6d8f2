/* make_csv (tf.data.experimental.make_csv_dataset): header, label, the
 * stacked feature vector, types inferred or given, errors naming the
 * file, line and column. */
#include "helpers.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pasco/example.h"

TestSuite(csv_dataset, .timeout = 10);

static char dir[64];

/* Writes text to dir/name (dir made on first use); returns the path. */
static const char *
write_csv(const char *name, const char *text)
{
	static char paths[4][128];
	static int  next;
	char       *p = paths[next++ % 4];
	FILE       *f;
	if (dir[0] == 0) {
		snprintf(dir, sizeof(dir), "/tmp/pasco_csvds_XXXXXX");
		cr_assert_not_null(mkdtemp(dir));
	}
	snprintf(p, 128, "%s/%s", dir, name);
	cr_assert_not_null(f = fopen(p, "w"));
	fputs(text, f);
	fclose(f);
	return p;
}

static void
cleanup(void)
{
	char cmd[128];
	if (dir[0] != 0) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		cr_assert_eq(system(cmd), 0);
		dir[0] = 0;
	}
}

/* The (x, y) of a batch; x a tensor or the dict entry name. */
static void
split(const pasco_value *e, const char *name, const pasco_tensor **x,
    const pasco_tensor **y)
{
	cr_assert_eq(pasco_value_kind_of(e), PASCO_VALUE_LIST);
	cr_assert_eq(pasco_value_size(e), 2);
	const pasco_value *xv = pasco_value_item(e, 0);
	if (name != NULL) {
		cr_assert_eq(pasco_value_kind_of(xv), PASCO_VALUE_DICT);
		cr_assert_eq(pasco_value_size(xv), 1);
		xv = pasco_value_get(xv, name);
	}
	cr_assert_not_null(*x = pasco_value_as_tensor(xv));
	cr_assert_not_null(*y = pasco_value_as_tensor(pasco_value_item(e, 1)));
}

Test(
    csv_dataset, stacks_the_other_columns_and_takes_the_label, .fini = cleanup)
{
	const char               *f = write_csv("a.csv", "f0,label,f1,f2\n"
	                                                               "1.5,2,-1,7\n"
	                                                               "2.5,0,3,\"8\"\n"
	                                                               "\n"
	                                                               "3.5,1,5,9\n");
	pasco_csv_dataset_options o = {
	    .label_name = "label", .batch_size = 2, .num_epochs = 1};
	pasco_dataset      *ds;
	pasco_value        *e;
	const pasco_tensor *x, *y;
	PASCO_PASS(pasco_dataset_make_csv(&ds, &f, 1, &o));
	PASCO_PASS(pasco_dataset_next(ds, &e));
	split(e, NULL, &x, &y);
	cr_assert(x->dtype == PASCO_F32 && x->rank == 2);
	cr_assert(x->shape[0] == 2 && x->shape[1] == 3);
	const float want[] = {1.5f, -1, 7, 2.5f, 3, 8};
	cr_assert_arr_eq(x->data, want, sizeof(want));
	cr_assert(y->dtype == PASCO_I64 && y->rank == 1 && y->shape[0] == 2);
	cr_assert(
	    ((int64_t *) y->data)[0] == 2 && ((int64_t *) y->data)[1] == 0);
	pasco_value_free(e);
	PASCO_PASS(pasco_dataset_next(ds, &e));
	split(e, NULL, &x, &y);
	cr_assert_eq(x->shape[0], 1, "the short last batch is kept");
	cr_assert(((float *) x->data)[2] == 9);
	pasco_value_free(e);
	PASCO_FAIL(pasco_dataset_next(ds, &e), PASCO_EOUTOFRANGE);
	pasco_dataset_free(ds);
}

Test(csv_dataset, selects_named_columns_in_their_order_under_a_name,
    .fini = cleanup)
{
	const char               *f     = write_csv("a.csv", "a,b,city,y\n"
	                                                                       "1,2,paris,0.5\n"
	                                                                       "3,4,rome,1.25\n");
	const char               *sel[] = {"b", "a"};
	pasco_csv_dataset_options o     = {.label_name = "y",
	        .select_columns                        = sel,
	        .nselect                               = 2,
	        .features_name                         = "dense",
	        .batch_size                            = 8,
	        .num_epochs                            = 2};
	pasco_dataset            *ds;
	pasco_value              *e;
	const pasco_tensor       *x, *y;
	PASCO_PASS(pasco_dataset_make_csv(&ds, &f, 1, &o));
	PASCO_PASS(pasco_dataset_next(ds, &e));
	split(e, "dense", &x, &y);
	cr_assert(x->shape[0] == 4 && x->shape[1] == 2, "2 epochs, batch 8");
	const float want[] = {2, 1, 4, 3, 2, 1, 4, 3};
	cr_assert_arr_eq(x->data, want, sizeof(want));
	cr_assert_eq(y->dtype, PASCO_F32, "a label with fractions is FLOAT");
	cr_assert(((float *) y->data)[1] == 1.25f);
	pasco_value_free(e);
	PASCO_FAIL(pasco_dataset_next(ds, &e), PASCO_EOUTOFRANGE);
	pasco_dataset_free(ds);
}

Test(csv_dataset, sixty_four_columns_feed_a_dense_input_shuffled_and_seeded,
    .fini = cleanup)
{
	char  *text = malloc(1 << 20), *p = text;
	size_t cap = 1 << 20;
	p += snprintf(p, cap, "label");
	for (int j = 0; j < 64; j++) {
		p += snprintf(p, cap - (size_t) (p - text), ",x%d", j);
	}
	p += snprintf(p, cap - (size_t) (p - text), "\n");
	for (int r = 0; r < 100; r++) {
		p += snprintf(p, cap - (size_t) (p - text), "%d", r % 10);
		for (int j = 0; j < 64; j++) {
			p += snprintf(
			    p, cap - (size_t) (p - text), ",%d.%d", r, j);
		}
		p += snprintf(p, cap - (size_t) (p - text), "\n");
	}
	const char *f = write_csv("wide.csv", text);
	free(text);
	pasco_csv_dataset_options o = {.label_name = "label",
	    .batch_size                            = 32,
	    .num_epochs                            = 1,
	    .shuffle_buffer_size                   = 100,
	    .shuffle_seed                          = 7};
	int64_t                   order[2][100];
	for (int run = 0; run < 2; run++) {
		pasco_dataset *ds;
		pasco_value   *e;
		int            n = 0;
		PASCO_PASS(pasco_dataset_make_csv(&ds, &f, 1, &o));
		while (pasco_dataset_next(ds, &e) == PASCO_OK) {
			const pasco_tensor *x, *y;
			split(e, NULL, &x, &y);
			cr_assert_eq(x->shape[1], 64);
			for (int64_t i = 0; i < x->shape[0]; i++) {
				float *row = (float *) x->data + i * 64;
				int    r   = (int) row[0];
				/* the row's own label and features */
				cr_assert_eq(((int64_t *) y->data)[i], r % 10);
				cr_assert_float_eq(row[63], r + 0.63, 1e-4);
				order[run][n++] = r;
			}
			pasco_value_free(e);
		}
		cr_assert_eq(n, 100);
		pasco_dataset_free(ds);
	}
	cr_assert_arr_eq(order[0], order[1], sizeof(order[0]), "seeded");
	bool moved = false;
	for (int i = 0; i < 100; i++) {
		moved = moved || order[0][i] != i;
	}
	cr_assert(moved, "shuffled");
}

/* A header too long to list whole is named by its first columns, its
 * last three and its count: the label column, last, stays in sight. */
Test(
    csv_dataset, a_wide_header_is_named_by_its_ends_and_count, .fini = cleanup)
{
	char  text[2048], *p = text;
	char *end = text + sizeof(text);
	for (int j = 0; j < 64; j++) {
		p += snprintf(p, (size_t) (end - p), "pixel%d,", j);
	}
	p += snprintf(p, (size_t) (end - p), "label\n");
	for (int j = 0; j < 64; j++) {
		p += snprintf(p, (size_t) (end - p), "0.5,");
	}
	snprintf(p, (size_t) (end - p), "3\n");
	const char               *f = write_csv("wide.csv", text);
	pasco_csv_dataset_options o = {
	    .label_name = "target", .batch_size = 4, .num_epochs = 1};
	pasco_dataset *ds;
	PASCO_FAIL(pasco_dataset_make_csv(&ds, &f, 1, &o), PASCO_EINVAL);
	const char *msg = pasco_dataset_last_error();
	cr_assert(strstr(msg, "'target'") &&
	              strstr(msg, "(pixel0, pixel1, ") &&
	              strstr(msg, "..., pixel62, pixel63, label; 65 columns)"),
	    "%s", msg);
}

Test(csv_dataset, types_can_be_given_and_files_must_share_the_header,
    .fini = cleanup)
{
	const char *f[2] = {
	    write_csv("a.csv", "x,y\n1,2\n"), write_csv("b.csv", "x,y\n3,\n")};
	pasco_csv_column t[] = {{"y", PASCO_FEATURE_FLOAT, true, -1, 0}};
	pasco_csv_dataset_options o = {.label_name = "y",
	    .batch_size                            = 2,
	    .num_epochs                            = 1,
	    .column_types                          = t,
	    .ncolumn_types                         = 1};
	pasco_dataset            *ds;
	pasco_value              *e;
	const pasco_tensor       *x, *y;
	PASCO_PASS(pasco_dataset_make_csv(&ds, f, 2, &o));
	PASCO_PASS(pasco_dataset_next(ds, &e));
	split(e, NULL, &x, &y);
	cr_assert_eq(y->dtype, PASCO_F32);
	cr_assert(((float *) y->data)[0] == 2 && ((float *) y->data)[1] == -1,
	    "the given default fills the empty field");
	cr_assert(((float *) x->data)[1] == 3);
	pasco_value_free(e);
	pasco_dataset_free(ds);

	f[1] = write_csv("c.csv", "x,z\n3,4\n");
	PASCO_FAIL(pasco_dataset_make_csv(&ds, f, 2, &o), PASCO_EINVAL);
	cr_assert_null(ds);
	cr_assert(strstr(pasco_dataset_last_error(), "c.csv") != NULL, "%s",
	    pasco_dataset_last_error());
	cr_assert(strstr(pasco_dataset_last_error(), "differs") != NULL);
}

Test(
    csv_dataset, errors_name_the_column_the_file_and_the_line, .fini = cleanup)
{
	const char               *f = write_csv("a.csv", "a,b,city,label\n"
	                                                               "1,2,paris,0\n"
	                                                               "3,4,rome,1\n"
	                                                               "5,oops,oslo,1\n");
	pasco_csv_dataset_options o = {
	    .label_name = "lbl", .batch_size = 4, .num_epochs = 1};
	pasco_dataset *ds;
	pasco_value   *e;
	const char    *msg;

	PASCO_FAIL(pasco_dataset_make_csv(&ds, &f, 1, &o), PASCO_EINVAL);
	msg = pasco_dataset_last_error();
	cr_assert(strstr(msg, "'lbl'") && strstr(msg, "a, b, city, label"),
	    "%s", msg);

	o.label_name = "label";
	PASCO_FAIL(pasco_dataset_make_csv(&ds, &f, 1, &o), PASCO_EINVAL);
	msg = pasco_dataset_last_error();
	cr_assert(strstr(msg, "'b'") && strstr(msg, "oops"), "%s", msg);

	const char *sel[] = {"a", "city"};
	o.select_columns  = sel;
	o.nselect         = 2;
	PASCO_FAIL(pasco_dataset_make_csv(&ds, &f, 1, &o), PASCO_EINVAL);
	msg = pasco_dataset_last_error();
	cr_assert(strstr(msg, "'city'") && strstr(msg, "paris"), "%s", msg);

	sel[1]                   = "b";
	o.select_columns         = sel;
	o.nselect                = 2;
	o.num_rows_for_inference = 2; /* b looks like integers */
	PASCO_PASS(pasco_dataset_make_csv(&ds, &f, 1, &o));
	PASCO_FAIL(pasco_dataset_next(ds, &e), PASCO_EINVAL);
	msg = pasco_dataset_last_error();
	cr_assert(strstr(msg, "a.csv:4") && strstr(msg, "column 'b'") &&
	              strstr(msg, "oops"),
	    "%s", msg);
	pasco_dataset_free(ds);

	o.batch_size = 0;
	PASCO_FAIL(pasco_dataset_make_csv(&ds, &f, 1, &o), PASCO_EINVAL);
	cr_assert(strstr(pasco_dataset_last_error(), "batch_size"));
	o.batch_size        = 1;
	const char *missing = "/nonexistent/x.csv";
	PASCO_FAIL(
	    pasco_dataset_make_csv(&ds, &missing, 1, &o), PASCO_ENOTFOUND);
	cr_assert(strstr(pasco_dataset_last_error(), missing));
}

Test(csv_dataset, hashed_columns_cannot_be_features_of_the_f32_vector,
    .fini = cleanup)
{
	const char *f = write_csv("a.csv", "user,x,label\nu1,2,0\nu2,3,1\n");
	pasco_csv_column t[] = {
	    {.name = "user", .type = PASCO_FEATURE_HASHED}};
	pasco_csv_dataset_options o = {.label_name = "label",
	    .batch_size                            = 2,
	    .num_epochs                            = 1,
	    .column_types                          = t,
	    .ncolumn_types                         = 1};
	pasco_dataset            *ds;
	pasco_value              *e;
	const pasco_tensor       *x, *y;
	const char               *msg;
	PASCO_FAIL(pasco_dataset_make_csv(&ds, &f, 1, &o), PASCO_EINVAL);
	cr_assert_null(ds);
	msg = pasco_dataset_last_error();
	cr_assert(strstr(msg, "feature column 'user' is HASHED") &&
	              strstr(msg, "pasco_dataset_csv"),
	    "%s", msg);
	/* left out, it may be there */
	const char *sel[] = {"x"};
	o.select_columns  = sel;
	o.nselect         = 1;
	PASCO_PASS(pasco_dataset_make_csv(&ds, &f, 1, &o));
	PASCO_PASS(pasco_dataset_next(ds, &e));
	split(e, NULL, &x, &y);
	cr_assert(x->shape[1] == 1 && ((float *) x->data)[1] == 3);
	pasco_value_free(e);
	pasco_dataset_free(ds);
}

/* examples/make_table writes the same files for one seed, and the table
 * reads back as 64 features and a label in [0, 10). */
Test(csv_dataset, make_table_writes_a_seeded_table_make_csv_reads,
    .fini = cleanup)
{
	const char *prog = getenv("PASCO_MAKE_TABLE");
	char        cmd[512], path[160];
	cr_assert_not_null(prog, "PASCO_MAKE_TABLE names examples/make_table");
	write_csv("unused.csv", "x\n"); /* makes dir */
	for (int run = 0; run < 2; run++) {
		snprintf(cmd, sizeof(cmd),
		    "%s %s/t%d --train 300 --eval 10 --seed 4 >/dev/null",
		    prog, dir, run);
		cr_assert_eq(system(cmd), 0);
	}
	snprintf(cmd, sizeof(cmd), "cmp -s %s/t0/train.csv %s/t1/train.csv",
	    dir, dir);
	cr_assert_eq(system(cmd), 0, "the same seed, the same file");

	snprintf(path, sizeof(path), "%s/t0/train.csv", dir);
	const char               *f = path;
	pasco_csv_dataset_options o = {
	    .label_name = "label", .batch_size = 300, .num_epochs = 1};
	pasco_dataset      *ds;
	pasco_value        *e;
	const pasco_tensor *x, *y;
	int                 seen[10] = {0};
	PASCO_PASS(pasco_dataset_make_csv(&ds, &f, 1, &o));
	PASCO_PASS(pasco_dataset_next(ds, &e));
	split(e, NULL, &x, &y);
	cr_assert(x->shape[0] == 300 && x->shape[1] == 64);
	cr_assert_eq(y->dtype, PASCO_I64);
	for (int i = 0; i < 300; i++) {
		int64_t c = ((int64_t *) y->data)[i];
		cr_assert(c >= 0 && c < 10);
		seen[c]++;
	}
	for (int c = 0; c < 10; c++) {
		cr_assert(seen[c] > 10, "class %d: %d rows", c, seen[c]);
	}
	pasco_value_free(e);
	pasco_dataset_free(ds);
}
