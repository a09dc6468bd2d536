/*
 * A main() for a fuzz target built without libFuzzer: replay inputs, then
 * run a seeded mutator over them for a number of iterations or seconds.
 * The test command runs it over the committed corpus (TAP, one case per
 * input and one for the generated inputs); a crash or failed assertion
 * leaves the input that caused it in crash-SEED-ITERATION (or
 * --artifact-prefix), ready to be committed as a regression case.
 *
 *   fuzz-vhca-run [--tap] [--seed S] [--iterations N] [--max-time SEC]
 *                 [--artifact-prefix P] [--group DIR]... CORPUS_FILE_OR_DIR...
 *
 * Each input is a test case of its own, except those of a --group
 * directory (a corpus grown by libFuzzer), which are one case together.
 *
 * Copyright (c) 2025 The vhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <glib.h>

#include "fuzz-target.h"

#if defined(__SANITIZE_ADDRESS__)
#define HAVE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_ASAN 1
#endif
#endif
#ifdef HAVE_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

#define FUZZ_MAX_INPUT       4096
#define FUZZ_MAX_INPUTS      4096

typedef struct Input {
    char *name;
    uint8_t *data;
    size_t len;
    int group;                      /* index in groups[], or -1 */
} Input;

/* A --group directory: its inputs are replayed as one test case. */
static const char *groups[16];
static unsigned ngroups;
static int cur_group = -1;

static Input inputs[FUZZ_MAX_INPUTS];
static unsigned ninputs;

/* The input being run, for the crash handlers. */
static const uint8_t *cur_data;
static size_t cur_len;
static char crash_path[4096];
static const char *cur_name;        /* a committed input, by its file */

static void save_current(void)
{
    int fd;

    if (cur_data && cur_name) {
        if (write(2, "fuzz: crashed on ", 17) > 0 &&
            write(2, cur_name, strlen(cur_name)) > 0) {
            (void)!write(2, "\n", 1);
        }
        cur_data = NULL;
        return;
    }
    if (!cur_data || !crash_path[0]) {
        return;
    }
    fd = open(crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        if (write(fd, cur_data, cur_len) == (ssize_t)cur_len &&
            write(2, "fuzz: input saved to ", 21) > 0) {
            if (write(2, crash_path, strlen(crash_path)) > 0) {
                (void)!write(2, "\n", 1);
            }
        }
        close(fd);
    }
    cur_data = NULL;
}

static void on_signal(int sig)
{
    struct sigaction sa = { .sa_handler = SIG_DFL };

    save_current();
    sigaction(sig, &sa, NULL);
    raise(sig);
}


static void add_input(const char *path)
{
    FILE *f = fopen(path, "rb");
    Input *in;

    if (!f) {
        perror(path);
        exit(2);
    }
    if (ninputs == FUZZ_MAX_INPUTS) {
        fprintf(stderr, "fuzz: more than %d inputs\n", FUZZ_MAX_INPUTS);
        exit(2);
    }
    in = &inputs[ninputs++];
    in->name = strdup(path);
    in->group = cur_group;
    in->data = malloc(FUZZ_MAX_INPUT);
    in->len = fread(in->data, 1, FUZZ_MAX_INPUT, f);
    fclose(f);
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A file, or every file of a directory in name order. */
static void add_path(const char *path)
{
    struct stat st;
    DIR *d;
    struct dirent *e;
    char **names = NULL;
    size_t n = 0, i;

    if (stat(path, &st) || !S_ISDIR(st.st_mode)) {
        add_input(path);
        return;
    }
    d = opendir(path);
    if (!d) {
        perror(path);
        exit(2);
    }
    while ((e = readdir(d))) {
        char full[4096];

        struct stat est;

        if (e->d_name[0] == '.') {
            continue;
        }
        snprintf(full, sizeof(full), "%s/%s", path, e->d_name);
        if (stat(full, &est) || !S_ISREG(est.st_mode)) {
            continue;               /* a --group of its own, maybe */
        }
        names = realloc(names, (n + 1) * sizeof(*names));
        names[n++] = strdup(full);
    }
    closedir(d);
    qsort(names, n, sizeof(*names), cmp_name);
    for (i = 0; i < n; i++) {
        add_input(names[i]);
        free(names[i]);
    }
    free(names);
}

/* xorshift64*: the same seed gives the same inputs on every machine. */
static uint64_t rng_state;

static uint64_t rng(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

static uint32_t below(uint32_t n)
{
    return n ? (uint32_t)(rng() % n) : 0;
}

/* Mutate @buf (*len bytes, room for FUZZ_MAX_INPUT) a few times. */
static void mutate(uint8_t *buf, size_t *len)
{
    static const uint8_t interesting[] = {
        0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff, 0x10, 0x40,
    };
    unsigned n = 1 + below(8);

    while (n--) {
        size_t l = *len;

        switch (below(8)) {
        case 0:                 /* flip a bit */
            if (l) {
                buf[below(l)] ^= 1u << below(8);
            }
            break;
        case 1:                 /* a random byte */
            if (l) {
                buf[below(l)] = rng();
            }
            break;
        case 2:                 /* an interesting byte */
            if (l) {
                buf[below(l)] = interesting[below(sizeof(interesting))];
            }
            break;
        case 3:                 /* add or subtract a little */
            if (l) {
                buf[below(l)] += (int)below(33) - 16;
            }
            break;
        case 4: {               /* insert random bytes */
            size_t at = below(l + 1), k = 1 + below(16);

            if (l + k <= FUZZ_MAX_INPUT) {
                memmove(buf + at + k, buf + at, l - at);
                for (size_t i = 0; i < k; i++) {
                    buf[at + i] = rng();
                }
                *len = l + k;
            }
            break;
        }
        case 5: {               /* delete a range */
            size_t at = below(l), k = 1 + below(16);

            if (l && at + k <= l) {
                memmove(buf + at, buf + at + k, l - at - k);
                *len = l - k;
            }
            break;
        }
        case 6: {               /* copy a range of itself elsewhere */
            size_t from = below(l), to = below(l), k = 1 + below(32);

            if (l && from + k <= l && to + k <= l) {
                memmove(buf + to, buf + from, k);
            }
            break;
        }
        default: {              /* splice in a piece of another input */
            const Input *o = &inputs[below(ninputs)];
            size_t from = below(o->len), k = 1 + below(64);
            size_t at = below(l + 1);

            if (o->len && from + k <= o->len && l + k <= FUZZ_MAX_INPUT) {
                memmove(buf + at + k, buf + at, l - at);
                memcpy(buf + at, o->data + from, k);
                *len = l + k;
            }
            break;
        }
        }
    }
}

/* DIR/FILE of a path, so that test names do not depend on the checkout. */
static const char *short_name(const char *path)
{
    const char *p = path + strlen(path);
    int slashes = 0;

    while (p > path) {
        if (p[-1] == '/' && ++slashes == 2) {
            break;
        }
        p--;
    }
    return p;
}

static void run_one(const uint8_t *data, size_t len)
{
    cur_data = data;
    cur_len = len;
    LLVMFuzzerTestOneInput(data, len);
    cur_data = NULL;
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    const char *prefix = "crash-";
    bool tap = false;
    uint64_t seed = 1, iterations = 1000, i;
    double max_time = 0, start;
    unsigned n, test = 0;
    uint8_t *buf = malloc(FUZZ_MAX_INPUT);
    int a;

    for (a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--tap")) {
            tap = true;
        } else if (!strcmp(argv[a], "--seed") && a + 1 < argc) {
            seed = g_ascii_strtoull(argv[++a], NULL, 0);
        } else if (!strcmp(argv[a], "--iterations") && a + 1 < argc) {
            iterations = g_ascii_strtoull(argv[++a], NULL, 0);
        } else if (!strcmp(argv[a], "--max-time") && a + 1 < argc) {
            max_time = g_ascii_strtod(argv[++a], NULL);
        } else if (!strcmp(argv[a], "--artifact-prefix") && a + 1 < argc) {
            prefix = argv[++a];
        } else if (!strcmp(argv[a], "--group") && a + 1 < argc &&
                   ngroups < G_N_ELEMENTS(groups)) {
            groups[ngroups] = argv[++a];
            cur_group = ngroups++;
            add_path(groups[cur_group]);
            cur_group = -1;
        } else if (argv[a][0] == '-') {
            fprintf(stderr, "usage: %s [--tap] [--seed S] [--iterations N] "
                    "[--max-time SEC] [--artifact-prefix P] "
                    "[--group DIR]... CORPUS...\n", argv[0]);
            return 2;
        } else {
            add_path(argv[a]);
        }
    }
    if (!ninputs) {
        fprintf(stderr, "fuzz: no inputs\n");
        return 2;
    }
    {
        static const int sigs[] = { SIGABRT, SIGSEGV, SIGTRAP, SIGILL,
                                    SIGFPE, SIGBUS };
        struct sigaction sa = { .sa_handler = on_signal };
        size_t k;

        for (k = 0; k < G_N_ELEMENTS(sigs); k++) {
            sigaction(sigs[k], &sa, NULL);
        }
    }
#ifdef HAVE_ASAN
    /* AddressSanitizer calls this before it exits. */
    __sanitizer_set_death_callback(save_current);
#endif

    if (tap) {
        unsigned cases = ngroups + (iterations || max_time);

        for (n = 0; n < ninputs; n++) {
            cases += inputs[n].group < 0;
        }
        printf("TAP version 13\n1..%u\n", cases);
        fflush(stdout);
    }
    /*
     * Replay: a committed input that crashes keeps its own name (the
     * crash report names it).  Each input outside a group is a case;
     * each group is one.
     */
    for (n = 0; n < ninputs; n++) {
        crash_path[0] = 0;
        cur_name = inputs[n].name;
        run_one(inputs[n].data, inputs[n].len);
        cur_name = NULL;
        if (tap && inputs[n].group < 0) {
            printf("ok %u - replay %s\n", ++test,
                   short_name(inputs[n].name));
            fflush(stdout);
        }
    }
    for (n = 0; tap && n < ngroups; n++) {
        unsigned k, count = 0;

        for (k = 0; k < ninputs; k++) {
            count += inputs[k].group == (int)n;
        }
        printf("ok %u - replay %s (%u inputs)\n", ++test,
               short_name(groups[n]), count);
    }

    rng_state = seed * 0x9e3779b97f4a7c15ull + 1;
    start = now_s();
    for (i = 0; (!iterations || i < iterations) &&
         (!max_time || now_s() - start < max_time); i++) {
        const Input *base = &inputs[i % ninputs];
        size_t len = base->len;

        if (!iterations && !max_time) {
            break;
        }
        memcpy(buf, base->data, len);
        mutate(buf, &len);
        snprintf(crash_path, sizeof(crash_path), "%s%llu-%llu", prefix,
                 (unsigned long long)seed, (unsigned long long)i);
        run_one(buf, len);
        if (!tap && i && i % 1000 == 0) {
            fprintf(stderr, "fuzz: %llu inputs, %.0f s\n",
                    (unsigned long long)i, now_s() - start);
        }
    }
    if (tap && (iterations || max_time)) {
        printf("ok %u - %llu mutated inputs, seed %llu, %.1f s\n", ++test,
               (unsigned long long)i, (unsigned long long)seed,
               now_s() - start);
    } else if (!tap) {
        fprintf(stderr, "fuzz: %u replayed, %llu mutated inputs (seed %llu) "
                "in %.1f s, no crash\n", ninputs, (unsigned long long)i,
                (unsigned long long)seed, now_s() - start);
    }
    for (n = 0; n < ninputs; n++) {
        free(inputs[n].name);
        free(inputs[n].data);
    }
    free(buf);
    return 0;
}
