/* A reader of plain olm.channel and olm.package lines of file-based catalogs (see _channels.py).
 *
 * A channel line is taken when it is exactly one JSON object of the keys schema
 * ("olm.channel"), package and name (non-empty strings) and entries (null or a list of entry
 * objects of the keys name (a non-empty string), replaces and skipRange (a string or null)
 * and skips (null or a list of strings)); a package line, of the keys schema
 * ("olm.package"), name (a non-empty string), defaultChannel and description (a string or
 * null); each key once, strings printable ASCII without escapes and not of one character.
 * Anything else is left to the caller, which decodes the line and reads it the general way
 * (with the exact errors). Entries equal in value (an empty replaces or skipRange is none,
 * as are null and an empty skips) get one number: the caller builds one object for each.
 */
#include "channels.h"
#include "hash.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *p;
    int n;
} span;

typedef struct {
    span name, replaces, skip_range;
    int skip_first, skip_count;
} entry_t;

typedef struct {
    /* the distinct entries' keys */
    char *karena;
    size_t karena_len, karena_cap;
    size_t *k_off;
    int *k_len;
    uint64_t *k_hash;
    size_t k_cap;
    int *slots; /* entry number + 1, 0 for a free slot */
    size_t n_slots;
    /* one line's entries and skips */
    entry_t *ents;
    size_t ents_cap;
    span *skips;
    size_t skips_cap;
    char *key;
    size_t key_cap;
    /* one channel's names: a table of name numbers, and per entry / per name number */
    int *nslots;
    size_t nslots_cap;
    int *name_of, *last_of, *rep_of;
    unsigned char *flags; /* per name number: 1 replaced or skipped by another entry, 2 skipped, 4 visited */
    size_t name_of_cap, last_of_cap, rep_of_cap, flags_cap;
    const span **names; /* per name number: its text */
    size_t names_ptr_cap;
    /* capacities of the outputs */
    size_t nent_cap, ids_cap, text_cap, names_cap, replaces_cap, ranges_cap, skips_text_cap, skipped_cap, enskips_cap, chain_len_cap, chain_pos_cap;
} priv_t;

static int grow(void **v, size_t *cap, size_t need, size_t size) {
    if (need <= *cap)
        return 0;
    size_t cap2 = *cap ? *cap : 64;
    while (cap2 < need)
        cap2 *= 2;
    void *p = realloc(*v, cap2 * size);
    if (!p)
        return 1;
    *v = p;
    *cap = cap2;
    return 0;
}

olm_chan *olm_chan_new(void) {
    olm_chan *c = calloc(1, sizeof(olm_chan));
    if (!c)
        return NULL;
    c->priv = calloc(1, sizeof(priv_t));
    if (!c->priv) {
        free(c);
        return NULL;
    }
    return c;
}

void olm_chan_free(olm_chan *c) {
    if (!c)
        return;
    priv_t *pv = c->priv;
    if (pv) {
        free(pv->karena);
        free(pv->k_off);
        free(pv->k_len);
        free(pv->k_hash);
        free(pv->slots);
        free(pv->ents);
        free(pv->skips);
        free(pv->key);
        free(pv->nslots);
        free(pv->name_of);
        free(pv->last_of);
        free(pv->rep_of);
        free(pv->flags);
        free(pv->names);
        free(pv);
    }
    free(c->line_nent);
    free(c->ids);
    free(c->text);
    free(c->e_names);
    free(c->e_replaces);
    free(c->e_ranges);
    free(c->e_skips);
    free(c->e_nskips);
    free(c->e_skipped);
    free(c->chain_len);
    free(c->chain_pos);
    free(c);
}

/* ------------------------------------------------------------------ parsing one line */

static const char *ws(const char *p, const char *e) {
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
        p++;
    return p;
}

/* a string at p (its opening quote); NULL when not one this reader takes: one of a single
 * character too, which Python makes a shared object and a decoder a new one each time (the
 * cache file, written by marshal, would show the difference) */
static const char *str(const char *p, const char *e, span *out) {
    if (p >= e || *p != '"')
        return NULL;
    const char *s = ++p;
    while (p < e) {
        unsigned char ch = (unsigned char)*p;
        if (ch == '"') {
            if (p - s == 1)
                return NULL;
            out->p = s;
            out->n = (int)(p - s);
            return p + 1;
        }
        if (ch == '\\' || ch < 0x20 || ch >= 0x7f)
            return NULL;
        p++;
    }
    return NULL;
}

static int is(span k, const char *lit, int n) { return k.n == n && memcmp(k.p, lit, (size_t)n) == 0; }

static const char *null_at(const char *p, const char *e) {
    return (e - p >= 4 && memcmp(p, "null", 4) == 0) ? p + 4 : NULL;
}

/* a string or null (n = 0 then, as for an empty string: none) */
static const char *opt_str(const char *p, const char *e, span *out) {
    if (p < e && *p == 'n') {
        out->p = p;
        out->n = 0;
        return null_at(p, e);
    }
    return str(p, e, out);
}

/* the opening of an object or a list at *pp: 1 a member or an element follows (*pp at it),
 * 0 it is empty (*pp past it), -1 not that */
static int opening(const char **pp, const char *e, char open, char close) {
    const char *p = *pp;
    if (p >= e || *p != open)
        return -1;
    p = ws(p + 1, e);
    if (p < e && *p == close) {
        *pp = p + 1;
        return 0;
    }
    *pp = p;
    return 1;
}

/* after a member or an element at *pp: 1 another follows (*pp at it), 0 the object or list
 * closes (*pp past it), -1 neither */
static int after(const char **pp, const char *e, char close) {
    const char *p = ws(*pp, e);
    if (p < e && *p == ',') {
        *pp = ws(p + 1, e);
        return 1;
    }
    if (p < e && *p == close) {
        *pp = p + 1;
        return 0;
    }
    return -1;
}

/* after a member's value (*pp past it, or NULL when the value is not one this reader takes;
 * bit: its key's): as after(), and -1 for such a value or a key met before */
static int member_end(const char **pp, const char *e, int *seen, int bit) {
    if (!*pp || (*seen & bit))
        return -1;
    *seen |= bit;
    return after(pp, e, '}');
}

/* a member's key at p: where its value starts, or NULL when not one this reader takes */
static const char *key(const char *p, const char *e, span *k) {
    p = str(p, e, k);
    if (!p)
        return NULL;
    p = ws(p, e);
    if (p >= e || *p != ':')
        return NULL;
    return ws(p + 1, e);
}

/* one entry object; 1 taken, 0 not, -1 out of memory */
static int entry(priv_t *pv, const char **pp, const char *e, entry_t *out, size_t *n_skips) {
    const char *p = *pp;
    int seen = 0, more;
    out->name.n = -1;
    out->replaces.p = out->skip_range.p = "";
    out->replaces.n = 0;
    out->skip_range.n = 0;
    out->skip_first = (int)*n_skips;
    out->skip_count = 0;
    if (opening(&p, e, '{', '}') <= 0)
        return 0; /* not an object, or no name */
    do {
        span k;
        int bit;
        p = key(p, e, &k);
        if (!p)
            return 0;
        if (is(k, "name", 4)) {
            bit = 1;
            p = str(p, e, &out->name);
            if (p && out->name.n == 0)
                return 0;
        } else if (is(k, "replaces", 8)) {
            bit = 2;
            p = opt_str(p, e, &out->replaces);
        } else if (is(k, "skipRange", 9)) {
            bit = 4;
            p = opt_str(p, e, &out->skip_range);
        } else if (is(k, "skips", 5)) {
            bit = 8;
            if (p < e && *p == 'n') {
                p = null_at(p, e);
            } else {
                out->skip_first = (int)*n_skips;
                out->skip_count = 0;
                int items = opening(&p, e, '[', ']');
                if (items < 0)
                    return 0;
                while (items) {
                    span s;
                    p = str(p, e, &s);
                    if (!p)
                        return 0;
                    if (grow((void **)&pv->skips, &pv->skips_cap, *n_skips + 1, sizeof(span)))
                        return -1;
                    pv->skips[(*n_skips)++] = s;
                    out->skip_count++;
                    items = after(&p, e, ']');
                    if (items < 0)
                        return 0;
                }
            }
        } else {
            return 0;
        }
        more = member_end(&p, e, &seen, bit);
        if (more < 0)
            return 0;
    } while (more);
    if (!(seen & 1))
        return 0;
    *pp = p;
    return 1;
}

/* one line; 1 a channel taken (its entries in pv->ents), 2 a package taken (its default
 * channel and description in pkg and desc), 0 not, -1 out of memory */
static int line(priv_t *pv, const char *p, const char *e, span *pkg, span *name, span *desc, size_t *n_ents) {
    int seen = 0, package = 0, more;
    size_t n_skips = 0;
    *n_ents = 0;
    p = ws(p, e);
    if (opening(&p, e, '{', '}') <= 0)
        return 0;
    do {
        span k, v;
        int bit;
        p = key(p, e, &k);
        if (!p)
            return 0;
        if (is(k, "schema", 6)) {
            bit = 1;
            p = str(p, e, &v);
            if (p && is(v, "olm.package", 11))
                package = 1;
            else if (p && !is(v, "olm.channel", 11))
                return 0;
        } else if (is(k, "defaultChannel", 14)) {
            bit = 16;
            p = opt_str(p, e, pkg);
        } else if (is(k, "description", 11)) {
            bit = 32;
            p = opt_str(p, e, desc);
        } else if (is(k, "package", 7)) {
            bit = 2;
            p = str(p, e, pkg);
            if (p && pkg->n == 0)
                return 0;
        } else if (is(k, "name", 4)) {
            bit = 4;
            p = str(p, e, name);
            if (p && name->n == 0)
                return 0;
        } else if (is(k, "entries", 7)) {
            bit = 8;
            if (p < e && *p == 'n') {
                p = null_at(p, e);
            } else {
                int items = opening(&p, e, '[', ']');
                if (items < 0)
                    return 0;
                while (items) {
                    if (grow((void **)&pv->ents, &pv->ents_cap, *n_ents + 1, sizeof(entry_t)))
                        return -1;
                    int rc = entry(pv, &p, e, &pv->ents[*n_ents], &n_skips);
                    if (rc <= 0)
                        return rc;
                    (*n_ents)++;
                    items = after(&p, e, ']');
                    if (items < 0)
                        return 0;
                }
            }
        } else {
            return 0;
        }
        more = member_end(&p, e, &seen, bit);
        if (more < 0)
            return 0;
    } while (more);
    if (ws(p, e) != e)
        return 0;
    if (package) {
        if ((seen & 5) != 5 || (seen & 10))
            return 0;
        if (!(seen & 16))
            pkg->n = 0;
        if (!(seen & 32))
            desc->n = 0;
        return 2;
    }
    return (seen & 7) == 7 && !(seen & 48) ? 1 : 0;
}

/* ------------------------------------------------------------------ distinct entries */

static uint64_t hash_bytes(const char *p, size_t n) { return olm_hash_bytes(OLM_HASH_SEED, p, n); }

static int put(char **buf, int *len, size_t *cap, const char *s, int n) {
    if (grow((void **)buf, cap, (size_t)*len + (size_t)n + 1, 1))
        return 1;
    memcpy(*buf + *len, s, (size_t)n);
    *len += n;
    (*buf)[(*len)++] = '\n';
    return 0;
}

/* the number of entry en of the current line (a new one written to the outputs); -1 out of memory */
static int intern(olm_chan *c, priv_t *pv, const entry_t *en) {
    size_t need = (size_t)en->name.n + (size_t)en->replaces.n + (size_t)en->skip_range.n + 3;
    for (int i = 0; i < en->skip_count; i++)
        need += (size_t)pv->skips[en->skip_first + i].n + 1;
    if (grow((void **)&pv->key, &pv->key_cap, need, 1))
        return -1;
    char *k = pv->key;
    size_t n = 0;
    memcpy(k + n, en->name.p, (size_t)en->name.n);
    n += (size_t)en->name.n;
    k[n++] = 1;
    memcpy(k + n, en->replaces.p, (size_t)en->replaces.n);
    n += (size_t)en->replaces.n;
    k[n++] = 1;
    memcpy(k + n, en->skip_range.p, (size_t)en->skip_range.n);
    n += (size_t)en->skip_range.n;
    k[n++] = 1;
    for (int i = 0; i < en->skip_count; i++) {
        const span *s = &pv->skips[en->skip_first + i];
        memcpy(k + n, s->p, (size_t)s->n);
        n += (size_t)s->n;
        k[n++] = 2;
    }
    uint64_t h = hash_bytes(k, n);
    int id = c->n_entries;
    if (olm_table_room(&pv->slots, &pv->n_slots, pv->k_hash, (size_t)id))
        return -1;
    size_t mask = pv->n_slots - 1, at = (size_t)h & mask;
    for (; pv->slots[at]; at = (at + 1) & mask) {
        int known = pv->slots[at] - 1;
        if (pv->k_hash[known] == h && (size_t)pv->k_len[known] == n &&
            memcmp(pv->karena + pv->k_off[known], k, n) == 0)
            return known;
    }
    /* a new one, at slot at */
    size_t old_cap = pv->k_cap;
    if (grow((void **)&pv->k_off, &pv->k_cap, (size_t)id + 1, sizeof(size_t)))
        return -1;
    if (pv->k_cap != old_cap) { /* k_len and k_hash follow k_off's capacity */
        int *kl = realloc(pv->k_len, pv->k_cap * sizeof(int));
        if (!kl)
            return -1;
        pv->k_len = kl;
        uint64_t *kh = realloc(pv->k_hash, pv->k_cap * sizeof(uint64_t));
        if (!kh)
            return -1;
        pv->k_hash = kh;
    }
    if (grow((void **)&pv->karena, &pv->karena_cap, pv->karena_len + n, 1))
        return -1;
    memcpy(pv->karena + pv->karena_len, k, n);
    pv->k_off[id] = pv->karena_len;
    pv->k_len[id] = (int)n;
    pv->k_hash[id] = h;
    pv->karena_len += n;
    pv->slots[at] = id + 1;
    c->n_entries++;
    if (en->skip_count) {
        if (grow((void **)&c->e_nskips, &pv->enskips_cap, (size_t)c->n_skipped + 1, sizeof(int)) ||
            grow((void **)&c->e_skipped, &pv->skipped_cap, (size_t)c->n_skipped + 1, sizeof(int)))
            return -1;
        c->e_skipped[c->n_skipped] = c->n_new;
        c->e_nskips[c->n_skipped++] = en->skip_count;
    }
    c->n_new++;
    if (put(&c->e_names, &c->e_names_len, &pv->names_cap, en->name.p, en->name.n) ||
        put(&c->e_replaces, &c->e_replaces_len, &pv->replaces_cap, en->replaces.p, en->replaces.n) ||
        put(&c->e_ranges, &c->e_ranges_len, &pv->ranges_cap, en->skip_range.p, en->skip_range.n))
        return -1;
    for (int i = 0; i < en->skip_count; i++) {
        const span *s = &pv->skips[en->skip_first + i];
        if (put(&c->e_skips, &c->e_skips_len, &pv->skips_text_cap, s->p, s->n))
            return -1;
    }
    return id;
}

/* ------------------------------------------------------------------ a channel's order */

static uint64_t hash_span(const span *s) { return hash_bytes(s->p, (size_t)s->n); }

/* the name number of s among the current channel's names, or -1; with add, a new one if none */
static int name_number(priv_t *pv, const span *s, size_t mask, int *n_names, int add) {
    size_t at = (size_t)(hash_span(s) & mask);
    for (;;) {
        int id = pv->nslots[at];
        if (!id)
            break;
        const span *t = pv->names[id - 1];
        if (t->n == s->n && memcmp(t->p, s->p, (size_t)s->n) == 0)
            return id - 1;
        at = (at + 1) & mask;
    }
    if (!add)
        return -1;
    int id = (*n_names)++;
    pv->names[id] = s;
    pv->nslots[at] = id + 1;
    return id;
}

/* the chain of the current line's n entries (see olm_chan.chain_len), as _sort_channel
 * makes it: written to the outputs; 0 done, 1 out of memory */
static int chain(olm_chan *c, priv_t *pv, size_t n, int taken) {
    if (grow((void **)&c->chain_len, &pv->chain_len_cap, (size_t)taken + 1, sizeof(int)))
        return 1;
    c->chain_len[taken] = -1;
    if (n == 0)
        return 0;
    size_t n_slots = 16;
    while (n_slots < 2 * n)
        n_slots *= 2;
    if (grow((void **)&pv->nslots, &pv->nslots_cap, n_slots, sizeof(int)) ||
        grow((void **)&pv->name_of, &pv->name_of_cap, n, sizeof(int)) ||
        grow((void **)&pv->last_of, &pv->last_of_cap, n, sizeof(int)) ||
        grow((void **)&pv->rep_of, &pv->rep_of_cap, n, sizeof(int)) ||
        grow((void **)&pv->flags, &pv->flags_cap, n, 1) ||
        grow((void **)&pv->names, &pv->names_ptr_cap, n, sizeof(span *)))
        return 1;
    memset(pv->nslots, 0, n_slots * sizeof(int));
    size_t mask = n_slots - 1;
    int n_names = 0;
    const entry_t *ents = pv->ents;
    /* by name: the last entry of each name */
    for (size_t i = 0; i < n; i++) {
        int id = name_number(pv, &ents[i].name, mask, &n_names, 1);
        pv->name_of[i] = id;
        pv->last_of[id] = (int)i;
    }
    memset(pv->flags, 0, (size_t)n_names);
    for (int id = 0; id < n_names; id++)
        pv->rep_of[id] = -1;
    /* what each entry replaces (the last entry of that name; a later entry of the same
     * name overrides), what is replaced or skipped, and what is skipped */
    for (size_t i = 0; i < n; i++) {
        const entry_t *e = &ents[i];
        if (e->replaces.n) {
            int r = name_number(pv, &e->replaces, mask, &n_names, 0);
            if (r >= 0) {
                pv->flags[r] |= 1;
                pv->rep_of[pv->name_of[i]] = pv->last_of[r];
            }
        }
        for (int k = 0; k < e->skip_count; k++) {
            const span *sk = &pv->skips[e->skip_first + k];
            int r = sk->n ? name_number(pv, sk, mask, &n_names, 0) : -1;
            if (r >= 0)
                pv->flags[r] |= 3;
        }
    }
    int head = -1;
    for (size_t i = 0; i < n; i++) {
        if (!(pv->flags[pv->name_of[i]] & 1)) {
            if (head >= 0)
                return 0; /* more than one head: an error */
            head = (int)i;
        }
    }
    if (head < 0)
        return 0; /* no head: an error */
    int start = c->n_chain_pos;
    int cur = head;
    for (;;) {
        int id = pv->name_of[cur];
        pv->flags[id] |= 4;
        if (!(pv->flags[id] & 2)) {
            if (grow((void **)&c->chain_pos, &pv->chain_pos_cap, (size_t)c->n_chain_pos + 1, sizeof(int)))
                return 1;
            c->chain_pos[c->n_chain_pos++] = cur;
        }
        int next = pv->rep_of[id];
        if (next < 0)
            break;
        if (pv->flags[pv->name_of[next]] & 4) {
            c->n_chain_pos = start; /* a cycle: an error */
            return 0;
        }
        cur = next;
    }
    c->chain_len[taken] = c->n_chain_pos - start;
    return 0;
}

int olm_chan_lines(olm_chan *c, const char *data, size_t n) {
    priv_t *pv = c->priv;
    c->n_lines = 0;
    c->n_ids = 0;
    c->text_len = 0;
    c->e_names_len = c->e_replaces_len = c->e_ranges_len = c->e_skips_len = 0;
    c->n_new = 0;
    c->n_skipped = 0;
    c->n_chain_pos = 0;
    int taken = 0;
    const char *p = data, *end = data + n;
    for (;;) {
        const char *e = memchr(p, '\n', (size_t)(end - p));
        if (!e)
            e = end;
        span pkg = {"", 0}, name = {"", 0}, desc = {"", 0};
        size_t n_ents;
        int rc = line(pv, p, e, &pkg, &name, &desc, &n_ents);
        if (rc < 0)
            return 1;
        if (grow((void **)&c->line_nent, &pv->nent_cap, (size_t)c->n_lines + 1, sizeof(int)))
            return 1;
        if (rc == 0) {
            c->line_nent[c->n_lines++] = -1;
        } else if (rc == 2) {
            c->line_nent[c->n_lines++] = -2;
            if (put(&c->text, &c->text_len, &pv->text_cap, name.p, name.n) ||
                put(&c->text, &c->text_len, &pv->text_cap, pkg.p, pkg.n) ||
                put(&c->text, &c->text_len, &pv->text_cap, desc.p, desc.n))
                return 1;
        } else {
            c->line_nent[c->n_lines++] = (int)n_ents;
            if (grow((void **)&c->ids, &pv->ids_cap, (size_t)c->n_ids + n_ents, sizeof(int)))
                return 1;
            for (size_t j = 0; j < n_ents; j++) {
                int id = intern(c, pv, &pv->ents[j]);
                if (id < 0)
                    return 1;
                c->ids[c->n_ids++] = id;
            }
            if (put(&c->text, &c->text_len, &pv->text_cap, pkg.p, pkg.n) ||
                put(&c->text, &c->text_len, &pv->text_cap, name.p, name.n) || chain(c, pv, n_ents, taken++))
                return 1;
        }
        if (e == end)
            return 0;
        p = e + 1;
    }
}
