/* Declarations of scan.c; _speedups_build.py hands them to cffi (preprocessor lines removed). */
#ifndef OLMKIT_SCAN_H
#define OLMKIT_SCAN_H
#include <stddef.h>

/* a scan of catalog files, one JSON blob per line (see _scan.py): the outputs of the last
 * olm_scan_file, and the distinct properties of every file scanned so far */
typedef struct {
    int n_lines, n_bundles, n_occ, n_dist;
    /* per line: -1 a line for the caller to decode, else the number of its bundle */
    int *line_kind, *line_start, *line_end;
    /* per bundle: its line (from 1), its first occurrence (n_bundles + 1 of them), the number
     * of distinct properties known once it was scanned */
    int *b_line, *b_prop_start, *b_ndist;
    int *occ; /* per property occurrence: its distinct property */
    /* the bundles' names, packages and images, each followed by a newline ("" for no image) */
    char *names, *packages, *images;
    size_t names_len, packages_len, images_len;
    /* per distinct property: flags (1 value written first, 2 text to canonicalise, 4 of a type
     * not interned), its type's and value's text at d_start in arena (farena with flag 4: the
     * last file's only); arena_first: where the last file's texts start in arena */
    char *arena, *farena;
    size_t arena_first, arena_len, farena_len;
    size_t *d_start;
    int *d_type_len, *d_value_len;
    unsigned char *d_flags;
    void *priv;
} olm_scan;

olm_scan *olm_scan_new(void);
void olm_scan_free(olm_scan *s);
/* 0 scanned, 1 out of memory, 2 not a file of one plain JSON value per line */
int olm_scan_file(olm_scan *s, const char *data, size_t n);
/* properties of this type are not interned: each is a distinct property of its own (0, 1 out of memory) */
int olm_scan_fresh(olm_scan *s, const char *type, int len);

#endif
