/*
 * safetensors.h: a .safetensors file (Hugging Face's format for a model's
 * weights), memory-mapped and checked before a number is read.
 *
 * The format: 8 bytes, the header's length N as a little-endian u64; N bytes
 * of JSON, an object whose keys name tensors
 *     "h.0.attn.c_attn.weight": {"dtype": "F32", "shape": [768, 2304],
 *                                "data_offsets": [BEGIN, END]}
 * and one optional "__metadata__" object of strings; then the data: tensor
 * t's bytes are [BEGIN, END) of it, little-endian, row-major, and the
 * tensors cover the data exactly (no byte twice, none left over).
 *
 * Nothing is copied when the file is opened: a tensor's numbers are read from
 * the mapping when they are asked for (st_value, st_to_mat), so a model of
 * gigabytes opens at once and only the layers a lesson shows are paged in.
 */
#ifndef ATTNVIZ_SAFETENSORS_H
#define ATTNVIZ_SAFETENSORS_H

#include <stddef.h>

#include "base/matrix.h"

/* Documented limits (README, "Real models"). */
#define ST_MAX_HEADER  (100L << 20) /* the header's JSON, as the reference implementation limits it */
#define ST_MAX_DIMS    8
#define ST_MAX_TENSORS (1L << 20)

/* Every dtype of the format; the first ST_DTYPE_NUMERIC convert to double exactly (st_value). */
typedef enum StDtype {
	ST_F64, ST_F32, ST_F16, ST_BF16, ST_I64, ST_I32, ST_I16, ST_I8, ST_U64, ST_U32, ST_U16, ST_U8, ST_BOOL,
	ST_DTYPE_NUMERIC,
	ST_F8_E4M3 = ST_DTYPE_NUMERIC, ST_F8_E5M2, ST_DTYPE_COUNT
} StDtype;

typedef struct StTensor {
	char *name;                      /* as in the header (owned; print it through text_escape) */
	StDtype dtype;
	int ndim;
	long long shape[ST_MAX_DIMS];
	long long count;                 /* the product of the shape (1 for a scalar) */
	const unsigned char *data;       /* count elements, in the mapping */
	size_t begin, end;               /* data_offsets */
} StTensor;

typedef struct StFile {
	char *name;                      /* the path, escaped for messages (owned) */
	const unsigned char *map;        /* the whole file */
	size_t size;
	int n;
	StTensor *tensors;               /* n of them, sorted by name */
} StFile;

/*
 * Open and check a file: NULL with *err (heap) saying where and what was
 * expected ("model.safetensors: \"h.0.mlp.c_fc.bias\".data_offsets: [0, 12]
 * holds 12 bytes, but shape [4] of F32 needs 16").
 */
StFile *st_open(const char *path, char **err);
void st_close(StFile *f);
/* The tensor of that name, or NULL. */
const StTensor *st_find(const StFile *f, const char *name);
/* "F32", …; the dtype of a name, or -1. */
const char *st_dtype_name(StDtype d);
int st_dtype_find(const char *name);
/* Bytes per element. */
int st_dtype_size(StDtype d);
/* Element i (row-major) as a double, exactly (an I64/U64 past 2^53 rounds); dtype < ST_DTYPE_NUMERIC. */
double st_value(const StTensor *t, long long i);
/*
 * A tensor of rows × cols numbers as a Mat of doubles (allocated): a 2-D
 * tensor as it is, or transposed (nn.Linear keeps its weight as out × in;
 * attnviz multiplies X·W with W in × out); a 1-D one as 1 × len. rows and
 * cols (after the transpose) are checked when > 0. Returns 0, or -1 with
 * *err naming the tensor and the shape expected.
 */
int st_to_mat(const StFile *f, const StTensor *t, int transpose, int rows, int cols, Mat *out, char **err);

#endif
