/* Declarations of channels.c; _speedups_build.py hands them to cffi (preprocessor lines removed). */
#ifndef OLMKIT_CHANNELS_H
#define OLMKIT_CHANNELS_H
#include <stddef.h>

/* a reader of plain olm.channel lines (see _channels.py): the outputs of the last
 * olm_chan_lines, and the distinct channel entries of every line read so far */
typedef struct {
    int n_lines;
    /* per line given: -1 a line for the caller to decode, -2 a package, else a channel:
     * its number of entries */
    int *line_nent;
    /* the entries of the lines taken, one after the other: their distinct entry numbers */
    int *ids;
    int n_ids;
    /* per line taken: a channel's package and name, a package's name, default channel and
     * description ("" for none), each followed by a newline */
    char *text;
    int text_len;
    /* distinct entries: n_entries in all, the last n_new of them first met in the last call;
     * per new one: its name, replaces and skipRange ("" for none) in e_names, e_replaces and
     * e_ranges, each followed by a newline; the n_skipped new ones that have skips: their
     * number among the new ones (e_skipped) and how many (e_nskips), the skips in e_skips,
     * each followed by a newline */
    int n_entries, n_new, n_skipped;
    char *e_names, *e_replaces, *e_ranges, *e_skips;
    int e_names_len, e_replaces_len, e_ranges_len, e_skips_len;
    int *e_skipped, *e_nskips;
    /* per channel taken: the length of its chain (head first, following replaces,
     * skipped entries left out, as the catalog's channel order), or -1 when the channel has
     * no single head or a cycle (its error is the caller's); the chains' entries, as
     * positions in their channel, one chain after the other */
    int *chain_len, *chain_pos;
    int n_chain_pos;
    void *priv;
} olm_chan;

olm_chan *olm_chan_new(void);
void olm_chan_free(olm_chan *c);
/* read the lines of data (n bytes, lines separated by newlines): 0 done, 1 out of memory */
int olm_chan_lines(olm_chan *c, const char *data, size_t n);

#endif
