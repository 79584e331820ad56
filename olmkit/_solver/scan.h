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
    /* the bundles' names and images, each followed by a newline ("" for no image) */
    char *names, *images;
    size_t names_len, images_len;
    /* per bundle: its package (numbered in the order met across files; the names of all, each
     * followed by a newline, in new_packages); duplicate: set once a bundle's package and name
     * were met before (taken, or registered with olm_scan_bundle), or only their hash */
    int *b_pkg;
    int n_packages, duplicate;
    char *new_packages;
    size_t new_packages_len;
    /* per distinct property: flags (1 value written first, 2 text to canonicalise, 4 of a type
     * not interned), its type's and value's text at d_start in arena (farena with flag 4: the
     * last file's only); arena_first: where the last file's texts start in arena */
    char *arena, *farena;
    size_t arena_first, arena_len, farena_len;
    size_t *d_start;
    int *d_type_len, *d_value_len;
    unsigned char *d_flags;
    /* per distinct property (all of them): its type (numbered in the order met; the last
     * file's new types' names from types_first, each followed by a newline, in new_types), its
     * key (-1: none) and its version (a string, -1: none); see olm_scan_type */
    int *d_type, *d_key, *d_version;
    int n_types, types_first, n_strings, strings_first, n_keys, keys_first;
    char *new_types, *new_strings;
    size_t new_types_len, new_strings_len;
    /* per key: its type and its strings (key_start: n_keys + 1 offsets into key_strs) */
    int *key_type, *key_start, *key_strs;
    /* the last file's new distinct properties' texts, each followed by a newline */
    char *new_texts;
    size_t new_texts_len;
    /* the last file's new distinct properties the caller reads itself (flag 8), in order */
    int *odd;
    int n_odd;
    /* set once two properties were written two ways (value first and type first) */
    int two_ways;
    void *priv;
} olm_scan;

olm_scan *olm_scan_new(void);
void olm_scan_free(olm_scan *s);
/* 0 scanned, 1 out of memory, 2 not a file of one plain JSON value per line */
int olm_scan_file(olm_scan *s, const char *data, size_t n);
/* scan n_files files one after the other, their outputs one after the other as if of one file
 * (line_kind's bundle numbers, b_prop_start's offsets and the new texts run on across them; a
 * file not taken adds nothing). Per file, OLM_SCAN_FILE_INTS ints in out: its status (0 taken,
 * 2 not taken), then once it is done: the lines and bundles of the outputs, how many of its
 * lines it left, how many of those come before its first bundle line, and flags (1 duplicate,
 * 2 two_ways, as they stood then). Returns 0, or 1 out of memory (outputs then unusable). */
#define OLM_SCAN_FILE_INTS 6
int olm_scan_files(olm_scan *s, const char *const *data, const size_t *n, int n_files, int *out);
/* how to read properties of a type (0, 1 out of memory, 2 bad arguments): kind 1 an identity
 * (interned whatever its form; its version is field 1), 2 read through its fields, 4 every one
 * odd (for the caller to read; else, without 2, not read); fields: n_fields names each followed by a newline; the key is
 * the first key_fields fields; empty_mask: the fields that may be empty */
int olm_scan_type(olm_scan *s, const char *type, int len, int kind, const char *fields, int n_fields, int key_fields,
                  unsigned empty_mask);
/* register a bundle read otherwise: 0, 1 its package and name (or their hash) met before, -1 out of memory */
int olm_scan_bundle(olm_scan *s, const char *package, int package_len, const char *name, int name_len);
/* the distinct property (-1 none) of a type and text, interned in the form value_first (0, 1) */
int olm_scan_find(olm_scan *s, const char *type, int type_len, const char *text, int text_len, int value_first);

/* Per row (row_start: n_rows + 1 offsets into refs), the value of its first distinct
 * property d with value[d] != -1 (first_out, -1: none); and each list's rows in order, each
 * once (list_start_out: n_lists + 1 offsets into rows_out, which has room for every ref):
 * d is in list d_list[d] (>= 0), none (-1), or the lists ex_lists[ex_start[e]:ex_start[e+1]]
 * for d_list[d] = -2 - e. Returns 0, 1 out of memory, 2 out of range. */
int olm_rows_index(const int *row_start, const int *refs, int n_rows, int n_dist, const int *value, const int *d_list,
                   const int *ex_start, const int *ex_lists, int n_ex, int n_lists, int *first_out, int *list_start_out,
                   int *rows_out);

#endif
