/* NumPy's standard normals, the same values, drawn ~3x faster (fast_normals.py), and the
 * ring check's exact sums of them (exact_sums.py). Also here, since they draw the same way:
 * the max pass (per layer, and stepping PCG64 itself for long passes), the draws ahead on a
 * thread of this file's own that never takes the GIL (`DrawJob`), and one rank's values added
 * to the exact sums (`add_values`).
 *
 * `Generator.standard_normal` draws each value with NumPy's ziggurat: one 64-bit word gives a
 * layer (its low byte), a sign and a 52-bit magnitude, and when the magnitude is below the
 * layer's bound the value is the magnitude times the layer's width. That common case is all
 * this file computes itself. Every other word (a wedge or the tail, ~1 % of them) is handed,
 * with the generator behind it, to NumPy's own `random_standard_normal` (libnpyrandom.a)
 * through a bit generator that gives that word first: NumPy then makes its own decision and
 * draws whatever more it needs, so the values and the generator's state after them are
 * NumPy's by construction.
 *
 * The bounds and widths are not copied from anywhere: `learn` asks NumPy's routine itself,
 * with scripted words, for each layer's bound (the least magnitude it does not take at once,
 * a binary search) and width (a power-of-two magnitude's value, divided back exactly). The
 * Python side then checks whole draws against NumPy's before it uses any of it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <pthread.h>
#include <string.h>
#include "numpy/random/distributions.h"

#define LAYERS 256
#define MAGNITUDE_BITS 52
static double WIDTH[LAYERS];
static uint64_t BOUND[LAYERS];      /* a layer's magnitudes below this are taken at once */
static int LEARNED = 0;
static int TRUSTED = 0;             /* set once whole draws matched NumPy's (`trust`) */

/* ---- the word that NumPy's routine gets first ------------------------------------------- */

typedef struct {
    bitgen_t *real;
    uint64_t first;
    int given;
} Replay;

static uint64_t replay_u64(void *st) {
    Replay *r = st;
    if (!r->given) {
        r->given = 1;
        return r->first;
    }
    return r->real->next_uint64(r->real->state);
}

static uint32_t replay_u32(void *st) {
    Replay *r = st;
    return r->real->next_uint32(r->real->state);
}

static double replay_double(void *st) {
    Replay *r = st;
    return r->real->next_double(r->real->state);
}

static uint64_t replay_raw(void *st) {
    Replay *r = st;
    return r->real->next_raw(r->real->state);
}

/* a word the layers do not take at once: NumPy's routine decides it (and draws what more it
   needs from the generator behind it) */
static double numpy_normal(bitgen_t *g, uint64_t word) {
    Replay replay = {g, word, 0};
    bitgen_t first = {&replay, replay_u64, replay_u32, replay_double, replay_raw};
    return random_standard_normal(&first);
}

/* a word a layer takes at once: its value in `*x`, 1; else 0 (NumPy's routine decides it) */
static inline int at_once(uint64_t word, double *x) {
    unsigned layer = (unsigned)(word & 0xff);
    uint64_t magnitude = (word >> 9) & ((1ULL << MAGNITUDE_BITS) - 1);
    if (magnitude >= BOUND[layer]) return 0;
    /* the sign by its bit, not a branch (half of them would be mispredicted): -x */
    union { double x; uint64_t bits; } value = {(double)magnitude * WIDTH[layer]};
    value.bits ^= (word & 0x100) << 55;
    *x = value.x;
    return 1;
}

static inline double normal(bitgen_t *g) {
    uint64_t word = g->next_uint64(g->state);
    double x;
    return at_once(word, &x) ? x : numpy_normal(g, word);
}

/* ---- learning the layers from NumPy's routine ---------------------------------------------- */

typedef struct {
    uint64_t word;
    int words, doubles;
} Script;

/* the scripted word first; then words any layer takes at once, should NumPy ask for more
   (layer 1, magnitude 0); every double 0.5 */
static uint64_t script_u64(void *st) {
    Script *s = st;
    return s->words++ == 0 ? s->word : 1;
}

static uint32_t script_u32(void *st) { return 1; }

static double script_double(void *st) {
    ((Script *)st)->doubles++;
    return 0.5;
}

static uint64_t script_raw(void *st) { return script_u64(st); }

/* NumPy's value for one word of (layer, sign, magnitude), and whether it took it at once */
static double probe(unsigned layer, int sign, uint64_t magnitude, int *at_once) {
    Script script = {(magnitude << 9) | ((uint64_t)sign << 8) | layer, 0, 0};
    bitgen_t scripted = {&script, script_u64, script_u32, script_double, script_raw};
    double x = random_standard_normal(&scripted);
    *at_once = script.words == 1 && script.doubles == 0;
    return x;
}

static PyObject *learn(PyObject *self, PyObject *unused) {
    for (unsigned layer = 0; layer < LAYERS; layer++) {
        int at_once;
        uint64_t low = 0, high = 1ULL << MAGNITUDE_BITS;   /* the bound is in [low, high] */
        probe(layer, 0, 0, &at_once);
        if (!at_once) high = 0;
        while (low < high) {             /* the least magnitude not taken at once */
            uint64_t middle = low + (high - low) / 2;
            probe(layer, 0, middle, &at_once);
            if (at_once) low = middle + 1;
            else high = middle;
        }
        BOUND[layer] = low;
        WIDTH[layer] = 0.0;
        if (low >= 2) {                  /* a power of two taken at once: its value / it */
            int shift = 63 - __builtin_clzll(low - 1);
            double x = probe(layer, 0, 1ULL << shift, &at_once);
            WIDTH[layer] = ldexp(x, -shift);
        } else {
            BOUND[layer] = 0;            /* (nothing to learn a width from: every word to NumPy) */
        }
    }
    LEARNED = 1;
    Py_RETURN_NONE;
}

/* check_bounds(): the words at each layer's edges (magnitudes 0, 1, bound - 1, bound, bound +
   1 and the largest, both signs) through `normal` and through NumPy's routine, the same
   scripted words and doubles behind them; returns the (layer, sign, magnitude) that differ */
static PyObject *check_bounds(PyObject *self, PyObject *unused) {
    PyObject *differ = PyList_New(0);
    if (differ == NULL) return NULL;
    for (unsigned layer = 0; layer < LAYERS; layer++) {
        uint64_t top = (1ULL << MAGNITUDE_BITS) - 1, bound = BOUND[layer];
        uint64_t edges[6] = {0, 1, bound ? bound - 1 : 0, bound, bound < top ? bound + 1 : top,
                             top};
        for (int e = 0; e < 6; e++) {
            for (int sign = 0; sign < 2; sign++) {
                int at_once;
                double theirs = probe(layer, sign, edges[e], &at_once);
                Script script = {(edges[e] << 9) | ((uint64_t)sign << 8) | layer, 0, 0};
                bitgen_t scripted = {&script, script_u64, script_u32, script_double, script_raw};
                double ours = normal(&scripted);
                if (memcmp(&ours, &theirs, sizeof ours) != 0) {
                    PyObject *where = Py_BuildValue("(IiK)", layer, sign,
                                                    (unsigned long long)edges[e]);
                    if (where == NULL || PyList_Append(differ, where) < 0) {
                        Py_XDECREF(where);
                        Py_DECREF(differ);
                        return NULL;
                    }
                    Py_DECREF(where);
                }
            }
        }
    }
    return differ;
}

/* ---- drawing ------------------------------------------------------------------------------- */

/* a draw's count (>= 0) and magnitude from their arguments; -1 with the error set */
static int count_and_magnitude(PyObject *count_arg, PyObject *magnitude_arg, const char *who,
                               Py_ssize_t *count, double *magnitude) {
    *count = PyLong_AsSsize_t(count_arg);
    *magnitude = PyFloat_AsDouble(magnitude_arg);
    if (PyErr_Occurred()) return -1;
    if (*count < 0) {
        PyErr_Format(PyExc_ValueError, "%s: count must be >= 0", who);
        return -1;
    }
    return 0;
}

/* the (capsule, count, magnitude) that draw and max_bits begin with; -1 with an error set */
static int draw_arguments(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t want,
                          const char *usage, bitgen_t **g, Py_ssize_t *count,
                          double *magnitude) {
    if (nargs != want) {
        PyErr_SetString(PyExc_TypeError, usage);
        return -1;
    }
    if (!LEARNED) {
        PyErr_SetString(PyExc_RuntimeError, "fastnormals: a draw before learn");
        return -1;
    }
    if ((*g = PyCapsule_GetPointer(args[0], "BitGenerator")) == NULL) return -1;
    return count_and_magnitude(args[1], args[2], "fastnormals", count, magnitude);
}

/* `o` as a writable C-contiguous buffer of at least `count` items of struct format `format`
   (`itemsize` bytes each); -1 with ValueError(`problem`) otherwise */
static int typed_buffer(PyObject *o, Py_buffer *view, Py_ssize_t count, const char *format,
                        Py_ssize_t itemsize, const char *problem) {
    if (PyObject_GetBuffer(o, view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    if (view->itemsize != itemsize || view->format == NULL || strcmp(view->format, format) != 0
            || view->len < count * itemsize) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_ValueError, problem);
        return -1;
    }
    return 0;
}

/* `out` as float32 with room for `count` values; -1 with an error set */
static int float_out(PyObject *o, Py_buffer *out, Py_ssize_t count) {
    return typed_buffer(o, out, count, "f", 4, "draw: out must be float32 with room for count");
}

/* a value as `draw` gives it: x times `magnitude`, rounded to float32 */
static inline float scaled(double x, double magnitude) {
    return magnitude == 1.0 ? (float)x : (float)(x * magnitude);
}

/* draw(capsule, count, magnitude, out): the generator's next `count` standard normals times
   `magnitude`, rounded to float32 into `out` (hosts.gradient_stream.draw), without the GIL */
static PyObject *draw(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    bitgen_t *g;
    Py_ssize_t count;
    double magnitude;
    Py_buffer out;
    if (draw_arguments(args, nargs, 4, "draw(capsule, count, magnitude, out)", &g, &count,
                       &magnitude) < 0 || float_out(args[3], &out, count) < 0)
        return NULL;
    float *values = out.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < count; i++) values[i] = scaled(normal(g), magnitude);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&out);
    Py_RETURN_NONE;
}

/* |x| of a value as `draw` gives it, as its float32 bit pattern */
static inline uint32_t magnitude_bits(double x, double magnitude) {
    float value = scaled(x, magnitude);
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits & 0x7FFFFFFFu;
}

/* The max pass. A word a layer takes at once is its magnitude times the layer's width, and
   that rounded to float32 (times a finite `magnitude`, the only ones fast_normals.py lets
   through) never decreases as the magnitude grows; so only each layer's largest magnitude is
   kept (`most`, plus one; 0 for none) and made a value once at the end: per word, an integer
   compare instead of a value. The words NumPy's routine decides are compared as they come. */
typedef struct {
    uint64_t most[LAYERS];
    uint32_t top;
} MaxPass;

/* a word a layer takes at once, kept by its magnitude (1); else 0, for `max_slow` */
static inline int max_fast(MaxPass *m, uint64_t word) {
    unsigned layer = (unsigned)(word & 0xff);
    uint64_t at = (word >> 9) & ((1ULL << MAGNITUDE_BITS) - 1);
    if (at >= BOUND[layer]) return 0;
    m->most[layer] = at + 1 > m->most[layer] ? at + 1 : m->most[layer];
    return 1;
}

/* a word NumPy's routine decides (with `rest` behind it), compared as it comes */
static void max_slow(MaxPass *m, uint64_t word, bitgen_t *rest, double magnitude) {
    uint32_t bits = magnitude_bits(numpy_normal(rest, word), magnitude);
    m->top = bits > m->top ? bits : m->top;
}

static uint32_t max_end(MaxPass *m, double magnitude) {
    for (unsigned layer = 0; layer < LAYERS; layer++) {
        if (m->most[layer] == 0) continue;
        uint32_t bits = magnitude_bits((double)(m->most[layer] - 1) * WIDTH[layer], magnitude);
        m->top = bits > m->top ? bits : m->top;
    }
    return m->top;
}

/* max_bits(capsule, count, magnitude): the largest |x| among the generator's next `count`
   values as `draw` gives them (float32), as its bit pattern with the sign cleared; the values
   themselves are not kept (a codec's max pass), without the GIL */
static PyObject *max_bits(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    bitgen_t *g;
    Py_ssize_t count;
    double magnitude;
    if (draw_arguments(args, nargs, 3, "max_bits(capsule, count, magnitude)", &g, &count,
                       &magnitude) < 0)
        return NULL;
    MaxPass m = {{0}, 0};
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < count; i++) {
        uint64_t word = g->next_uint64(g->state);
        if (!max_fast(&m, word)) max_slow(&m, word, g, magnitude);
    }
    max_end(&m, magnitude);
    Py_END_ALLOW_THREADS
    return PyLong_FromUnsignedLong(m.top);
}

/* ---- NumPy's PCG64, stepped here, for the max pass -------------------------------------------
 * A PCG64 word is one step of a 128-bit LCG (state = state x multiplier + inc) and the new
 * state's XSL-RR output (its halves XORed, rotated right by its top 6 bits). NumPy's generator
 * gives each word through a function pointer; the max pass, which does nothing else with most
 * words, steps the LCG itself, as two chains (`max_pcg_pairs`): 3.4 ns a value became ~2.4
 * here (~2.75 with one chain). It starts from the generator's public state (fast_normals.py
 * reads `bit_generator.state` and writes the state after back), so nothing reads NumPy's
 * private structures, and fast_normals.py compares whole max passes and the states after them
 * with NumPy's before it uses this. */
typedef unsigned __int128 u128;
static const u128 PCG_MULTIPLIER = ((u128)2549297995355413924ULL << 64) | 4865540595714422341ULL;

typedef struct {
    u128 state, inc;
    int asked_32;            /* NumPy's routine asked for a 32-bit word: not served here */
} Pcg;

static inline uint64_t pcg_output(u128 state) {
    uint64_t x = (uint64_t)(state >> 64) ^ (uint64_t)state;
    unsigned rotation = (unsigned)(state >> 122);
    return (x >> rotation) | (x << ((64 - rotation) & 63));
}

static inline uint64_t pcg_next(Pcg *p) {
    p->state = p->state * PCG_MULTIPLIER + p->inc;
    return pcg_output(p->state);
}

/* the same words for NumPy's routine (a word it decides, and what it draws after it) */
static uint64_t pcg_u64(void *st) { return pcg_next(st); }
static uint64_t pcg_raw(void *st) { return pcg_next(st); }
static double pcg_double(void *st) {          /* NumPy's PCG64 double: the top 53 bits */
    return (double)(pcg_next(st) >> 11) * (1.0 / 9007199254740992.0);
}
static uint32_t pcg_u32(void *st) {
    ((Pcg *)st)->asked_32 = 1;
    return 0;
}

/* NULL with the LookupError of a PCG64 stepped here whose words NumPy's routine asked 32 bits
   of (not served here: the caller takes NumPy's generator itself) */
static PyObject *asked_32_error(void) {
    PyErr_SetString(PyExc_LookupError, "fastnormals: NumPy's routine asked for 32 bits");
    return NULL;
}

/* a Pcg from the arguments (state_hi, state_lo, inc_hi, inc_lo, ...) of the functions below
   that step PCG64 here; -1 with an error set (also before `learn`: the layers are unknown) */
static int pcg_from(PyObject *const *args, Pcg *p) {
    if (!LEARNED) {
        PyErr_SetString(PyExc_RuntimeError, "fastnormals: a draw before learn");
        return -1;
    }
    unsigned long long part[4];
    for (int i = 0; i < 4; i++) {
        part[i] = PyLong_AsUnsignedLongLong(args[i]);
        if (part[i] == (unsigned long long)-1 && PyErr_Occurred()) return -1;
    }
    p->state = ((u128)part[0] << 64) | part[1];
    p->inc = ((u128)part[2] << 64) | part[3];
    p->asked_32 = 0;
    return 0;
}

/* The max pass's words, two states at a time: each step of the LCG waits for the last one's
   128-bit multiply, so the even and the odd states are stepped as two chains of their own
   (state x multiplier^2 + inc x (multiplier + 1)), whose multiplies overlap. A word NumPy's
   routine decides goes to it with the state that gave it; both chains then start again from
   the state NumPy left. Returns the state after the pass's last word. */
static u128 max_pcg_pairs(MaxPass *m, Pcg *p, bitgen_t *rest, Py_ssize_t count,
                          double magnitude) {
    const u128 inc = p->inc;
    const u128 multiplier2 = PCG_MULTIPLIER * PCG_MULTIPLIER;
    const u128 inc2 = inc * PCG_MULTIPLIER + inc;
    u128 state = p->state;                 /* the state after the last word taken */
    Py_ssize_t i = 0;
    while (i < count) {
        u128 even = state * PCG_MULTIPLIER + inc, odd = even * PCG_MULTIPLIER + inc;
        while (i < count) {
            if (count - i == 1) {          /* the last word: one step */
                state = even;
                uint64_t word = pcg_output(even);
                i++;
                if (!max_fast(m, word)) {
                    p->state = state;
                    max_slow(m, word, rest, magnitude);
                    state = p->state;
                }
                break;
            }
            uint64_t first = pcg_output(even), second = pcg_output(odd);
            if (!max_fast(m, first)) {
                p->state = even;
                i++;
                max_slow(m, first, rest, magnitude);
                state = p->state;
                break;
            }
            if (!max_fast(m, second)) {
                p->state = odd;
                i += 2;
                max_slow(m, second, rest, magnitude);
                state = p->state;
                break;
            }
            i += 2;
            state = odd;
            even = even * multiplier2 + inc2;
            odd = odd * multiplier2 + inc2;
        }
    }
    return state;
}

/* max_bits_pcg(state_hi, state_lo, inc_hi, inc_lo, count, magnitude) -> (top, state_hi,
   state_lo): `max_bits` from a PCG64 generator's public state, stepped here; LookupError when
   NumPy's routine asked for a 32-bit word (the caller then takes NumPy's generator itself) */
static PyObject *max_bits_pcg(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError,
                        "max_bits_pcg(state_hi, state_lo, inc_hi, inc_lo, count, magnitude)");
        return NULL;
    }
    Pcg p;
    if (pcg_from(args, &p) < 0) return NULL;
    Py_ssize_t count;
    double magnitude;
    if (count_and_magnitude(args[4], args[5], "fastnormals", &count, &magnitude) < 0)
        return NULL;
    bitgen_t rest = {&p, pcg_u64, pcg_u32, pcg_double, pcg_raw};
    MaxPass m = {{0}, 0};
    Py_BEGIN_ALLOW_THREADS
    p.state = max_pcg_pairs(&m, &p, &rest, count, magnitude);
    max_end(&m, magnitude);
    Py_END_ALLOW_THREADS
    if (p.asked_32) {
        return asked_32_error();
    }
    return Py_BuildValue("(kKK)", (unsigned long)m.top, (unsigned long long)(p.state >> 64),
                         (unsigned long long)p.state);
}

/* pcg_marks(state_hi, state_lo, inc_hi, inc_lo, steps) -> bytes of 2 x len(steps) native
   64-bit words: a PCG64 generator's public state stepped here over `steps` values in turn (a
   sequence of counts), and the state (high, low) after each step: where its normals'
   stream is at each of a reader's cuts (inaemu/sim/seekable_gradient.py's marks), for the
   cost of a max pass and no value kept, without the GIL. The values' magnitude does not
   change which words they take. LookupError when NumPy's routine asked for a 32-bit word. */
static PyObject *pcg_marks(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "pcg_marks(state_hi, state_lo, inc_hi, inc_lo, steps)");
        return NULL;
    }
    Pcg p;
    if (pcg_from(args, &p) < 0) return NULL;
    PyObject *steps = PySequence_Fast(args[4], "pcg_marks: steps must be a sequence of counts");
    if (steps == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(steps);
    Py_ssize_t *counts = PyMem_Malloc(sizeof(Py_ssize_t) * (n ? n : 1));
    uint64_t *words = PyMem_Malloc(sizeof(uint64_t) * 2 * (n ? n : 1));
    if (counts == NULL || words == NULL) {
        PyMem_Free(counts);
        PyMem_Free(words);
        Py_DECREF(steps);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        counts[i] = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(steps, i));
        if (counts[i] < 0) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "pcg_marks: a step must be a count >= 0");
            PyMem_Free(counts);
            PyMem_Free(words);
            Py_DECREF(steps);
            return NULL;
        }
    }
    Py_DECREF(steps);
    bitgen_t rest = {&p, pcg_u64, pcg_u32, pcg_double, pcg_raw};
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n && !p.asked_32; i++) {
        MaxPass m = {{0}, 0};                 /* (the maximum is not wanted) */
        p.state = max_pcg_pairs(&m, &p, &rest, counts[i], 1.0);
        words[2 * i] = (uint64_t)(p.state >> 64);
        words[2 * i + 1] = (uint64_t)p.state;
    }
    Py_END_ALLOW_THREADS
    PyMem_Free(counts);
    if (p.asked_32) {
        PyMem_Free(words);
        return asked_32_error();
    }
    PyObject *out = PyBytes_FromStringAndSize((const char *)words,
                                              (Py_ssize_t)(sizeof(uint64_t) * 2 * n));
    PyMem_Free(words);
    return out;
}

/* a word NumPy's routine decides, given to it with the state `at` that gave it: its value as
   `draw` gives it, `p` left at the state NumPy's routine left */
static inline float decided(Pcg *p, bitgen_t *rest, u128 at, uint64_t word, double magnitude) {
    p->state = at;
    return scaled(numpy_normal(rest, word), magnitude);
}

/* `draw`'s values from the state in `p`, its words two states at a time as the max pass takes
   them (`max_pcg_pairs`); `p` left at the state after the last word. A word NumPy's routine
   decides goes to it with the state that gave it, and both chains start again from the
   state NumPy left. Stops early when NumPy's routine asked for a 32-bit word. */
static void draw_pcg_pairs(Pcg *p, bitgen_t *rest, Py_ssize_t count, double magnitude,
                           float *values) {
    const u128 inc = p->inc;
    const u128 multiplier2 = PCG_MULTIPLIER * PCG_MULTIPLIER;
    const u128 inc2 = inc * PCG_MULTIPLIER + inc;
    u128 state = p->state;                 /* the state after the last word taken */
    Py_ssize_t i = 0;
    double x;
    while (i < count && !p->asked_32) {
        u128 even = state * PCG_MULTIPLIER + inc, odd = even * PCG_MULTIPLIER + inc;
        while (i < count) {
            if (count - i == 1) {          /* the last word: one step */
                uint64_t word = pcg_output(even);
                if (at_once(word, &x)) {
                    values[i++] = scaled(x, magnitude);
                    state = even;
                } else {
                    values[i++] = decided(p, rest, even, word, magnitude);
                    state = p->state;
                }
                break;
            }
            uint64_t first = pcg_output(even), second = pcg_output(odd);
            if (!at_once(first, &x)) {
                values[i++] = decided(p, rest, even, first, magnitude);
                state = p->state;
                break;
            }
            values[i++] = scaled(x, magnitude);
            if (!at_once(second, &x)) {
                values[i++] = decided(p, rest, odd, second, magnitude);
                state = p->state;
                break;
            }
            values[i++] = scaled(x, magnitude);
            state = odd;
            even = even * multiplier2 + inc2;
            odd = odd * multiplier2 + inc2;
        }
    }
    p->state = state;
}

/* draw_pcg(state_hi, state_lo, inc_hi, inc_lo, count, magnitude, out) -> (state_hi,
   state_lo): `draw` from a PCG64 generator's public state, stepped here (no generator object,
   nor its state's round trip through a dict), and the state after; LookupError when NumPy's
   routine asked for a 32-bit word (`out` then holds part of the values) */
static PyObject *draw_pcg(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "draw_pcg(state_hi, state_lo, inc_hi, inc_lo, count, "
                        "magnitude, out)");
        return NULL;
    }
    Pcg p;
    if (pcg_from(args, &p) < 0) return NULL;
    Py_ssize_t count;
    double magnitude;
    Py_buffer out;
    if (count_and_magnitude(args[4], args[5], "draw_pcg", &count, &magnitude) < 0
            || float_out(args[6], &out, count) < 0)
        return NULL;
    bitgen_t rest = {&p, pcg_u64, pcg_u32, pcg_double, pcg_raw};
    Py_BEGIN_ALLOW_THREADS
    draw_pcg_pairs(&p, &rest, count, magnitude, out.buf);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&out);
    if (p.asked_32) {
        return asked_32_error();
    }
    return Py_BuildValue("(KK)", (unsigned long long)(p.state >> 64),
                         (unsigned long long)p.state);
}

/* trust(): whole draws matched NumPy's (fast_normals.py checked them): `add_drawn` may draw
   with `normal` too */
static PyObject *trust(PyObject *self, PyObject *unused) {
    TRUSTED = LEARNED;
    Py_RETURN_NONE;
}

/* ---- exact sums of every rank's draws (inaemu/sim/native/exact_sums.py) ---------------------
 * `add_drawn(capsules, count, magnitude, total, abs_total)`: for each generator, in order (the
 * ranks 0..n-1: float64 addition is not associative), its next `count` standard normals, times
 * `magnitude`, rounded to float32 (`hosts.gradient_stream.draw`), added to `total` and their
 * magnitudes to `abs_total` (float64, `hosts.agent.add_exact`). The generators are the
 * caller's own, already at the block's first value, and nobody else's meanwhile. Drawn by
 * `normal` once trusted, else by NumPy's own `random_standard_normal_fill`. */
static int sums_buffer(PyObject *o, Py_buffer *view, Py_ssize_t count) {
    return typed_buffer(o, view, count, "d", 8, "sums: float64 arrays of at least count values");
}

/* One rank's float32 values into the exact float64 sums, and their magnitudes into the sums
   of |x| (`hosts.agent.add_exact`: the conversion is exact, each addition the one rounding),
   vectorized where the machine has AVX2 (a clone chosen at load time; each clone adds the same
   way, element by element). */
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define CLONED __attribute__((target_clones("avx2", "default"), optimize("O3")))
#else
#define CLONED
#endif
CLONED static void add_floats(double *restrict total, double *restrict abs_total,
                              const float *restrict values, Py_ssize_t count) {
    for (Py_ssize_t i = 0; i < count; i++) total[i] += (double)values[i];
    if (abs_total != NULL)
        for (Py_ssize_t i = 0; i < count; i++) abs_total[i] += (double)fabsf(values[i]);
}

static PyObject *add_drawn(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError,
                        "add_drawn(capsules, count, magnitude, total, abs_total or None)");
        return NULL;
    }
    if (!PyTuple_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "add_drawn: the generators' capsules, a tuple");
        return NULL;
    }
    Py_ssize_t count;
    double magnitude;
    if (count_and_magnitude(args[1], args[2], "add_drawn", &count, &magnitude) < 0)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(args[0]);
    bitgen_t **generators = PyMem_Malloc(sizeof(bitgen_t *) * (n ? n : 1));
    /* NumPy's doubles, before they are scaled to float32: only where NumPy draws them */
    int trusted = TRUSTED;
    double *drawn = trusted ? NULL : PyMem_Malloc(sizeof(double) * (count ? count : 1));
    float *values = PyMem_Malloc(sizeof(float) * (count ? count : 1));
    Py_buffer total_view, abs_view;
    int has_total = 0, has_abs = 0;
    PyObject *result = NULL;
    if (generators == NULL || (!trusted && drawn == NULL) || values == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t r = 0; r < n; r++) {
        generators[r] = PyCapsule_GetPointer(PyTuple_GET_ITEM(args[0], r), "BitGenerator");
        if (generators[r] == NULL) goto done;
    }
    if (sums_buffer(args[3], &total_view, count) < 0) goto done;
    has_total = 1;
    if (args[4] != Py_None) {
        if (sums_buffer(args[4], &abs_view, count) < 0) goto done;
        has_abs = 1;
    }
    double *total = total_view.buf, *abs_total = has_abs ? abs_view.buf : NULL;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; r < n; r++) {
        if (trusted) {
            for (Py_ssize_t i = 0; i < count; i++)
                values[i] = scaled(normal(generators[r]), magnitude);
        } else {
            random_standard_normal_fill(generators[r], count, drawn);
            for (Py_ssize_t i = 0; i < count; i++) values[i] = scaled(drawn[i], magnitude);
        }
        add_floats(total, abs_total, values, count);
    }
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    if (has_total) PyBuffer_Release(&total_view);
    if (has_abs) PyBuffer_Release(&abs_view);
    PyMem_Free(generators);
    PyMem_Free(drawn);
    PyMem_Free(values);
    return result;
}

/* add_values(values, total, abs_total or None): one rank's float32 `values` into the exact
   sums (`hosts.agent.add_exact`'s, the same float64 results), with the GIL held (a block is
   ~10-20 us: handing the GIL over would cost more) */
static PyObject *add_values(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "add_values(values, total, abs_total or None)");
        return NULL;
    }
    Py_buffer in, total_view, abs_view;
    if (PyObject_GetBuffer(args[0], &in, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
    if (in.itemsize != 4 || in.format == NULL || strcmp(in.format, "f") != 0) {
        PyBuffer_Release(&in);
        PyErr_SetString(PyExc_ValueError, "add_values: values must be float32");
        return NULL;
    }
    Py_ssize_t count = in.len / 4;
    if (sums_buffer(args[1], &total_view, count) < 0) {
        PyBuffer_Release(&in);
        return NULL;
    }
    int has_abs = args[2] != Py_None;
    if (has_abs && sums_buffer(args[2], &abs_view, count) < 0) {
        PyBuffer_Release(&in);
        PyBuffer_Release(&total_view);
        return NULL;
    }
    add_floats(total_view.buf, has_abs ? abs_view.buf : NULL, in.buf, count);
    PyBuffer_Release(&in);
    PyBuffer_Release(&total_view);
    if (has_abs) PyBuffer_Release(&abs_view);
    Py_RETURN_NONE;
}

/* ---- draws on a thread of this file's own (fast_normals.py `DrawWorker`) ------------------
 * A stream's next block drawn ahead on a Python thread needs the GIL twice (to start the job,
 * and after the draw), and the simulation's thread, which holds it nearly always and gives it
 * up only between Python calls, kept those draws waiting and then waited for them itself. A
 * `DrawJob` is drawn by a POSIX thread that never takes the GIL: the job holds the generator's
 * bit generator and the output buffer (and the objects that own them) from `submit` until it
 * is freed, and the thread touches nothing else. The generator is the job's until it is done
 * or cancelled (the stream reads nothing else from it meanwhile). A job may instead draw from
 * a PCG64 state it holds (`submit_pcg`: a ring rank's next read, from its mark, as `draw_pcg`
 * draws it), which no one else touches. One thread, jobs in the order submitted. */
enum { JOB_QUEUED, JOB_RUNNING, JOB_DONE, JOB_CANCELLED };

typedef struct DrawJob {
    PyObject_HEAD
    PyObject *owner;                /* the bit generator whose memory `g` is (its capsule owns
                                     * nothing) */
    Py_buffer out;                  /* float32, `count` values */
    bitgen_t *g;
    Py_ssize_t count;
    double magnitude;
    int state;                      /* under job_mutex */
    int pcg;                        /* drawn from `p` (submit_pcg), not from `g` */
    Pcg p;
    struct DrawJob *next;           /* the queue, while queued */
} DrawJob;

static pthread_mutex_t job_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t job_queued = PTHREAD_COND_INITIALIZER;
static pthread_cond_t job_ended = PTHREAD_COND_INITIALIZER;
static DrawJob *queue_head, *queue_tail;
static DrawJob *running_job;        /* the one the thread draws, if any */
static int worker_running;

static void *draw_worker(void *unused) {
    pthread_mutex_lock(&job_mutex);
    for (;;) {
        while (queue_head == NULL) pthread_cond_wait(&job_queued, &job_mutex);
        DrawJob *job = queue_head;
        queue_head = job->next;
        if (queue_head == NULL) queue_tail = NULL;
        job->next = NULL;
        job->state = JOB_RUNNING;
        running_job = job;
        pthread_mutex_unlock(&job_mutex);
        float *values = job->out.buf;
        if (job->pcg) {
            bitgen_t rest = {&job->p, pcg_u64, pcg_u32, pcg_double, pcg_raw};
            draw_pcg_pairs(&job->p, &rest, job->count, job->magnitude, values);
        } else {
            for (Py_ssize_t i = 0; i < job->count; i++)
                values[i] = scaled(normal(job->g), job->magnitude);
        }
        pthread_mutex_lock(&job_mutex);
        job->state = JOB_DONE;
        running_job = NULL;
        pthread_cond_broadcast(&job_ended);
    }
    return NULL;
}

/* fork: the child has no drawing thread. Its copies of the jobs it waited for are cancelled
   (a result() raises instead of waiting forever) and its next submit starts a thread. */
static void before_fork(void) { pthread_mutex_lock(&job_mutex); }
static void after_fork_parent(void) { pthread_mutex_unlock(&job_mutex); }
static void after_fork_child(void) {
    pthread_mutex_init(&job_mutex, NULL);
    pthread_cond_init(&job_queued, NULL);
    pthread_cond_init(&job_ended, NULL);
    for (DrawJob *job = queue_head, *next; job != NULL; job = next) {
        next = job->next;
        job->next = NULL;
        job->state = JOB_CANCELLED;
    }
    if (running_job != NULL) running_job->state = JOB_CANCELLED;
    queue_head = queue_tail = running_job = NULL;
    worker_running = 0;
}

/* a queued job out of the queue (under job_mutex) */
static void unqueue(DrawJob *job) {
    DrawJob **link = &queue_head, *before = NULL;
    while (*link != NULL && *link != job) {
        before = *link;
        link = &(*link)->next;
    }
    if (*link == NULL) return;
    *link = job->next;
    if (queue_tail == job) queue_tail = before;
    job->next = NULL;
}

/* until the job is done or cancelled, without the GIL */
static void wait_ended(DrawJob *job) {
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&job_mutex);
    while (job->state == JOB_QUEUED || job->state == JOB_RUNNING)
        pthread_cond_wait(&job_ended, &job_mutex);
    pthread_mutex_unlock(&job_mutex);
    Py_END_ALLOW_THREADS
}

static int job_state(DrawJob *job) {
    pthread_mutex_lock(&job_mutex);
    int state = job->state;
    pthread_mutex_unlock(&job_mutex);
    return state;
}

static void DrawJob_dealloc(DrawJob *job) {
    /* queued: taken out; running: waited for (the thread writes into `out`) */
    pthread_mutex_lock(&job_mutex);
    if (job->state == JOB_QUEUED) {
        unqueue(job);
        job->state = JOB_CANCELLED;
    }
    int running = job->state == JOB_RUNNING;
    pthread_mutex_unlock(&job_mutex);
    if (running) wait_ended(job);
    if (job->out.obj != NULL) PyBuffer_Release(&job->out);
    Py_XDECREF(job->owner);
    Py_TYPE(job)->tp_free((PyObject *)job);
}

/* result(): the output array once drawn (waiting for it without the GIL); CancelledError-like
   RuntimeError when cancelled before it ran; a PCG64 job's LookupError when NumPy's routine
   asked for 32 bits (as `draw_pcg`'s) */
static PyObject *DrawJob_result(DrawJob *job, PyObject *unused) {
    wait_ended(job);
    if (job_state(job) == JOB_CANCELLED) {
        PyErr_SetString(PyExc_RuntimeError, "the draw was cancelled");
        return NULL;
    }
    if (job->pcg && job->p.asked_32) return asked_32_error();
    return Py_NewRef(job->out.obj);
}

/* cancel(): True when the job had not started (it never will), else False */
static PyObject *DrawJob_cancel(DrawJob *job, PyObject *unused) {
    pthread_mutex_lock(&job_mutex);
    int queued = job->state == JOB_QUEUED;
    if (queued) {
        unqueue(job);
        job->state = JOB_CANCELLED;
        pthread_cond_broadcast(&job_ended);
    }
    pthread_mutex_unlock(&job_mutex);
    return PyBool_FromLong(queued);
}

static PyObject *DrawJob_cancelled(DrawJob *job, PyObject *unused) {
    return PyBool_FromLong(job_state(job) == JOB_CANCELLED);
}

static PyObject *DrawJob_done(DrawJob *job, PyObject *unused) {
    int state = job_state(job);
    return PyBool_FromLong(state == JOB_DONE || state == JOB_CANCELLED);
}

static PyMethodDef DrawJob_methods[] = {
    {"result", (PyCFunction)DrawJob_result, METH_NOARGS, "the values, once drawn"},
    {"cancel", (PyCFunction)DrawJob_cancel, METH_NOARGS, "cancel if not started"},
    {"cancelled", (PyCFunction)DrawJob_cancelled, METH_NOARGS, "cancelled before it ran?"},
    {"done", (PyCFunction)DrawJob_done, METH_NOARGS, "drawn or cancelled?"},
    {NULL}
};

static PyTypeObject DrawJobType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "fastnormals.DrawJob",
    .tp_basicsize = sizeof(DrawJob),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)DrawJob_dealloc,
    .tp_methods = DrawJob_methods,
    .tp_doc = "a draw on this module's own thread (submit)",
};

static DrawJob *new_job(PyObject *owner, Py_ssize_t count, double magnitude);
static PyObject *queue_job(DrawJob *job, PyObject *out);

/* submit(capsule, count, magnitude, out, owner) -> DrawJob: `draw` on this module's thread;
   `owner`, the bit generator whose capsule it is, is kept alive by the job. The caller keeps
   the generator to itself until the job is done or cancelled. */
static PyObject *submit(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    bitgen_t *g;
    Py_ssize_t count;
    double magnitude;
    if (draw_arguments(args, nargs, 5, "submit(capsule, count, magnitude, out, owner)", &g,
                       &count, &magnitude) < 0)
        return NULL;
    if (!TRUSTED) {
        PyErr_SetString(PyExc_RuntimeError, "fastnormals: submit before the draws were trusted");
        return NULL;
    }
    DrawJob *job = new_job(args[4], count, magnitude);
    if (job == NULL) return NULL;
    job->g = g;
    return queue_job(job, args[3]);
}

/* submit_pcg(state_hi, state_lo, inc_hi, inc_lo, count, magnitude, out) -> DrawJob: what
   `draw_pcg` draws from that PCG64 state, drawn on this module's thread into float32 `out`
   (kept alive by the job) */
static PyObject *submit_pcg(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "submit_pcg(state_hi, state_lo, inc_hi, inc_lo, count, "
                        "magnitude, out)");
        return NULL;
    }
    Pcg p;
    Py_ssize_t count;
    double magnitude;
    if (pcg_from(args, &p) < 0
            || count_and_magnitude(args[4], args[5], "submit_pcg", &count, &magnitude) < 0)
        return NULL;
    DrawJob *job = new_job(args[6], count, magnitude);
    if (job == NULL) return NULL;
    job->pcg = 1;
    job->p = p;
    return queue_job(job, args[6]);
}

/* a job of `count` values times `magnitude`, not queued yet, holding `owner` */
static DrawJob *new_job(PyObject *owner, Py_ssize_t count, double magnitude) {
    DrawJob *job = PyObject_New(DrawJob, &DrawJobType);
    if (job == NULL) return NULL;
    job->owner = Py_NewRef(owner);
    job->out.obj = NULL;
    job->g = NULL;
    job->pcg = 0;
    job->count = count;
    job->magnitude = magnitude;
    job->next = NULL;
    job->state = JOB_CANCELLED;            /* (until queued: a failure frees it so) */
    return job;
}

/* `job` given its output `out` and queued for the thread (started if none runs): the job, or
   NULL with an error (the job freed) */
static PyObject *queue_job(DrawJob *job, PyObject *out) {
    if (float_out(out, &job->out, job->count) < 0) {
        Py_DECREF(job);
        return NULL;
    }
    pthread_mutex_lock(&job_mutex);
    if (!worker_running) {
        pthread_t thread;
        pthread_attr_t attributes;
        pthread_attr_init(&attributes);
        pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
        int failed = pthread_create(&thread, &attributes, draw_worker, NULL);
        pthread_attr_destroy(&attributes);
        if (failed) {
            pthread_mutex_unlock(&job_mutex);
            Py_DECREF(job);
            PyErr_SetString(PyExc_RuntimeError, "fastnormals: no thread for the draws");
            return NULL;
        }
        worker_running = 1;
    }
    job->state = JOB_QUEUED;
    if (queue_tail != NULL) queue_tail->next = job;
    else queue_head = job;
    queue_tail = job;
    pthread_cond_signal(&job_queued);
    pthread_mutex_unlock(&job_mutex);
    return (PyObject *)job;
}

static PyMethodDef functions[] = {
    {"learn", learn, METH_NOARGS, "learn(): the layers' bounds and widths, from NumPy's routine"},
    {"check_bounds", check_bounds, METH_NOARGS,
     "check_bounds(): the words at the layers' edges where this file and NumPy differ"},
    {"trust", trust, METH_NOARGS, "trust(): whole draws matched NumPy's; add_drawn may use them"},
    {"add_drawn", (PyCFunction)(void (*)(void))add_drawn, METH_FASTCALL,
     "add_drawn(capsules, count, magnitude, total, abs_total): the generators' next values "
     "added to the exact sums, without the GIL"},
    {"add_values", (PyCFunction)(void (*)(void))add_values, METH_FASTCALL,
     "add_values(values, total, abs_total): float32 values added to the exact sums"},
    {"submit", (PyCFunction)(void (*)(void))submit, METH_FASTCALL,
     "submit(capsule, count, magnitude, out, owner): `draw` on this module's own thread, a "
     "DrawJob"},
    {"submit_pcg", (PyCFunction)(void (*)(void))submit_pcg, METH_FASTCALL,
     "submit_pcg(state_hi, state_lo, inc_hi, inc_lo, count, magnitude, out): `draw_pcg`'s "
     "values on this module's own thread, a DrawJob"},
    {"draw", (PyCFunction)(void (*)(void))draw, METH_FASTCALL,
     "draw(capsule, count, magnitude, out): standard normals times magnitude into float32 out"},
    {"max_bits", (PyCFunction)(void (*)(void))max_bits, METH_FASTCALL,
     "max_bits(capsule, count, magnitude): the largest |x| bit pattern of the next draws"},
    {"draw_pcg", (PyCFunction)(void (*)(void))draw_pcg, METH_FASTCALL,
     "draw_pcg(state_hi, state_lo, inc_hi, inc_lo, count, magnitude, out): draw from a PCG64 "
     "state stepped here; the state after"},
    {"pcg_marks", (PyCFunction)(void (*)(void))pcg_marks, METH_FASTCALL,
     "pcg_marks(state_hi, state_lo, inc_hi, inc_lo, steps): the PCG64 state after each step "
     "of values, as native 64-bit words (high, low) in bytes"},
    {"max_bits_pcg", (PyCFunction)(void (*)(void))max_bits_pcg, METH_FASTCALL,
     "max_bits_pcg(state_hi, state_lo, inc_hi, inc_lo, count, magnitude): max_bits from a "
     "PCG64 state, stepped here; returns (top, state_hi, state_lo)"},
    {NULL}
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "MODULE_NAME", "NumPy's standard normals, drawn faster", -1, functions,
};

PyMODINIT_FUNC PyInit_MODULE_NAME(void) {
    if (PyType_Ready(&DrawJobType) < 0) return NULL;
    if (pthread_atfork(before_fork, after_fork_parent, after_fork_child) != 0) {
        PyErr_SetString(PyExc_RuntimeError, "fastnormals: pthread_atfork failed");
        return NULL;
    }
    return PyModule_Create(&module_def);
}
