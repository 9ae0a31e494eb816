"""Numba kernels of the Sent2Vec trainer (imports only numpy and numba).

Every kernel takes arrays and scalars only, never a model object, and releases the GIL
(``nogil=True``), so the trainer runs one kernel call per worker thread on shared matrices
without locks (Hogwild), as the official ``epfml/sent2vec`` trainer does.

Semantics (official C++ code, ``src/fasttext.cc`` ``FastText::sent2vec`` and ``src/model.cc``
``Model::update``), for one sentence of in-vocabulary ids ``w[0..L-1]`` (``L >= 2``):

* every position ``t`` draws a uniform number ``u``; it is a target when
  ``u <= keep_prob[w[t]]`` (discard table ``sqrt(t/f) + t/f``) and ``target_ok[w[t]]``
  (count ``>= min_count_label``); other positions stay in the context;
* the context of target ``t`` is the sentence with ``w[t]`` replaced by the placeholder id
  (official) or removed (``exclude_target``, the paper's ``S \\ {w_t}``), plus its word n-grams;
* dropout (``word_ngrams >= 2`` and ``dropout_k > 0``): positions are drawn uniformly from
  ``{1, ..., L}`` until ``dropout_k`` distinct ones are drawn or only two positions remain
  (``dictionary.cc`` ``addNgrams``: position 0 is never drawn; the value ``L`` lies past the
  sentence and is a draw that removes nothing). A dropped position removes every n-gram that
  touches it; unigrams are never removed;
* an n-gram ``(a, b)`` has row ``nwords + (a * 116049371 + b) mod bucket`` (uint64 arithmetic,
  longer n-grams fold left);
* hidden vector = mean of the context rows of ``wi``; ``neg + 1`` binary logistic steps on the
  rows of ``wo`` (the target, then ``neg`` negatives read cyclically from a shuffled
  count^0.5 table, skipping the target); the gradient is divided by the number of context
  features and added to every context row (repeats accumulate);
* the sigmoid and log are the official 512-entry tables over [-8, 8] (``exact_sigmoid``
  switches to ``1 / (1 + exp(-x))`` and ``log``);
* arithmetic is float32 in source order (no ``fastmath``): a dot product ``wo[k] . hidden``
  sums 8 interleaved lanes (lane ``j`` takes ``d = j mod 8``) combined pairwise,
  ``((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7))``, and its terms and the two updates
  ``grad += alpha * wo[k]``, ``wo[k] += alpha * hidden`` are fused multiply-adds (one rounding)
  where the CPU has FMA. The bits of a run therefore depend neither on how LLVM optimised a
  kernel nor on which compiled copy of it runs (with ``fastmath`` they did: a process that had
  just compiled the kernels called the sentence kernel's own copy, one that loaded them from
  numba's cache the copy linked into the job loop, and the two were optimised differently);
* the learning rate of a sentence is ``lr0 * (1 - progress)``, progress counted in tokens over
  all epochs and refreshed every ``lr_update_rate`` tokens (``trainThread``).

Update modes:

* ``MODE_TARGET`` ("target"): the official per-target update, every target seeing the updates
  of the targets before it. Computed incrementally (:func:`_sentence_target_fast`): the sum of
  the sentence's feature rows and each row's pending correction are kept up to date, so a target
  costs O(dim * (neg + dropout_k + const)) instead of O(dim * L); equal to the literal
  computation (``MODE_TARGET_NAIVE``, used for ``l1 > 0`` and ``word_ngrams > 2``) in exact
  arithmetic. Rows are written back once per sentence, so other threads see a sentence's
  updates at its end (Hogwild timing only).
* ``MODE_SENTENCE`` ("sentence"): a deferred variant: every target of a sentence reads the rows
  as they were at the start of the sentence (the sum is corrected per target for the target's
  unigram, its placeholder and bigrams, and dropped bigrams); each target's share
  ``a_t = g_t / n_t`` is summed into ``G`` and every row receives, at the end of the sentence,
  ``G`` minus the shares of the targets whose context lacked it. The ``wo`` updates stay
  immediate. Not the official schedule; kept as an option and measured.

Random numbers come from SplitMix64 (one 64-bit state per thread, ``rng_state``), documented
so a pure-numpy reference can replay it: ``uniform = (z >> 11) * 2**-53`` and
``randint(n) = ((z >> 32) * n) >> 32``. Per sentence with ``L >= 2``, each position consumes
one uniform; each target then consumes its dropout draws (``1 + randint(L)`` per draw).

The optional L1 proximal step (paper appendix B, absent from the official code) soft-thresholds
every touched row after its update: source rows by ``l1 * lr / n_t`` per context occurrence,
target rows by ``l1 * lr``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

SIGMOID_TABLE_SIZE = 512
MAX_SIGMOID = 8.0
LOG_TABLE_SIZE = 512
NGRAM_HASH_MULTIPLIER = 116049371
MODE_TARGET = 0
MODE_SENTENCE = 1
#: the official per-target update computed literally (context list rebuilt and averaged per
#: target); ``MODE_TARGET`` uses it only for ``l1 > 0`` or ``word_ngrams > 2``
MODE_TARGET_NAIVE = 2
#: stats slots (float64 array of length N_STATS, one per thread)
STAT_LOSS, STAT_TARGETS, STAT_TOKENS, STAT_LR = 0, 1, 2, 3
N_STATS = 4

_U64_MASK = (1 << 64) - 1


def sigmoid_table() -> np.ndarray:
    """Official sigmoid table: float32 array of shape (513,), entry i = sigmoid(16 i / 512 - 8)."""
    i = np.arange(SIGMOID_TABLE_SIZE + 1, dtype=np.float32)
    x = (i * np.float32(2 * MAX_SIGMOID)) / np.float32(SIGMOID_TABLE_SIZE) - np.float32(MAX_SIGMOID)
    return (1.0 / (1.0 + np.exp(-x.astype(np.float64)))).astype(np.float32)


def log_table() -> np.ndarray:
    """Official log table: float32 array of shape (513,), entry i = log((i + 1e-5) / 512)."""
    i = np.arange(LOG_TABLE_SIZE + 1, dtype=np.float64)
    return np.log((i + 1e-5) / LOG_TABLE_SIZE).astype(np.float32)


def rng_initial_state(seed: int, thread_id: int) -> np.ndarray:
    """Initial SplitMix64 state of a worker: uint64 array of shape (1,).

    ``state = (seed * 0x9E3779B97F4A7C15 + (thread_id + 1) * 0xD1B54A32D192ED03) mod 2**64``.
    """
    s = (int(seed) * 0x9E3779B97F4A7C15 + (int(thread_id) + 1) * 0xD1B54A32D192ED03) & _U64_MASK
    return np.array([s], dtype=np.uint64)


@njit(nogil=True, cache=True, inline="always")
def _next_u64(state):
    s = state[0] + np.uint64(0x9E3779B97F4A7C15)
    state[0] = s
    z = (s ^ (s >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(nogil=True, cache=True, inline="always")
def _uniform(state):
    return np.float64(_next_u64(state) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(nogil=True, cache=True, inline="always")
def _randint(state, n):
    return np.int64(((_next_u64(state) >> np.uint64(32)) * np.uint64(n)) >> np.uint64(32))


def _llvm_major() -> int:
    try:
        from numba.core.codegen import ll

        return int(ll.llvm_version_info[0])
    except Exception:  # pragma: no cover - numba internals moved
        return 0


# llvm.prefetch is overloaded on the pointer type: "p0" with opaque pointers (LLVM >= 15)
_PREFETCH_NAME = "llvm.prefetch.p0" if _llvm_major() >= 15 else "llvm.prefetch.p0i8"


@intrinsic
def _prefetch(typingctx, arr, row, col):
    """Hint the CPU to load the cache line holding ``arr[row, col]`` (no semantic effect)."""
    if not isinstance(arr, types.Array) or arr.ndim != 2:
        return None
    sig = types.void(arr, row, col)

    def codegen(context, builder, signature, args):
        aryty, rowty, colty = signature.args
        ary = context.make_array(aryty)(context, builder, args[0])
        r = context.cast(builder, args[1], rowty, types.intp)
        c = context.cast(builder, args[2], colty, types.intp)
        ptr = cgutils.get_item_pointer2(
            context,
            builder,
            data=ary.data,
            shape=cgutils.unpack_tuple(builder, ary.shape),
            strides=cgutils.unpack_tuple(builder, ary.strides),
            layout=aryty.layout,
            inds=[r, c],
            boundscheck=False,
        )
        ir = cgutils.ir
        i8p = ir.PointerType(ir.IntType(8))
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, _PREFETCH_NAME)
        # (address, rw=0 read, locality=3 keep in all caches, cache type=1 data)
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen


@njit(nogil=True, cache=True)
def _prefetch_probe(mat):
    _prefetch(mat, 0, 0)


def _prefetch_works() -> bool:
    """The hint is built from numba internals; check it compiles, else use a no-op."""
    try:
        _prefetch_probe(np.zeros((1, 16), dtype=np.float32))
        return True
    except Exception:  # pragma: no cover - depends on the numba/LLVM version
        return False


if not _prefetch_works():  # pragma: no cover

    @njit(nogil=True, cache=True, inline="always")
    def _prefetch(arr, row, col):
        return None


@njit(nogil=True, cache=True, inline="always")
def _prefetch_row(mat, row):
    for c in range(0, mat.shape[1], 16):  # one hint per 64-byte line of float32
        _prefetch(mat, row, c)


@njit(nogil=True, cache=True, inline="always")
def _prefetch_negatives(wo, neg_table, pos, count):
    n = neg_table.shape[0]
    for q in range(count):
        _prefetch_row(wo, neg_table[(pos + q) % n])


def _host_has_fma() -> bool:
    try:
        from llvmlite import binding as llvm

        return bool(llvm.get_host_cpu_features().get("fma", False))
    except Exception:  # pragma: no cover - llvmlite internals moved
        return False


#: fused multiply-adds where the CPU has them (elsewhere ``llvm.fma`` would be a slow libm call)
_HAS_FMA = _host_has_fma()


@intrinsic
def _fma(typingctx, a, b, c):
    """``a * b + c`` with one rounding (``llvm.fma.f32``)."""
    if not all(isinstance(x, types.Float) and x.bitwidth == 32 for x in (a, b, c)):
        return None
    sig = types.float32(types.float32, types.float32, types.float32)

    def codegen(context, builder, signature, args):
        return builder.fma(args[0], args[1], args[2])

    return sig, codegen


@njit(nogil=True, cache=True, inline="always")
def _muladd(a, b, c):
    if _HAS_FMA:
        return _fma(a, b, c)
    return a * b + c


@njit(nogil=True, cache=True, inline="always")
def _row_dot(mat, row, vec):
    """``sum_d mat[row, d] * vec[d]`` in float32 as 8 interleaved lanes, combined pairwise: one
    fixed order (no ``fastmath`` needed) that the CPU still runs 8 lanes wide."""
    n = vec.shape[0]
    m = n - n % 8
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = np.float32(0.0)
    for d in range(0, m, 8):
        s0 = _muladd(mat[row, d], vec[d], s0)
        s1 = _muladd(mat[row, d + 1], vec[d + 1], s1)
        s2 = _muladd(mat[row, d + 2], vec[d + 2], s2)
        s3 = _muladd(mat[row, d + 3], vec[d + 3], s3)
        s4 = _muladd(mat[row, d + 4], vec[d + 4], s4)
        s5 = _muladd(mat[row, d + 5], vec[d + 5], s5)
        s6 = _muladd(mat[row, d + 6], vec[d + 6], s6)
        s7 = _muladd(mat[row, d + 7], vec[d + 7], s7)
    for d in range(m, n):
        s0 = _muladd(mat[row, d], vec[d], s0)
    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))


@njit(nogil=True, cache=True)
def shuffle_table(table, rng_state):
    """Shuffle ``table`` in place (Fisher-Yates, ``j = randint(i + 1)`` for i = n-1 .. 1).

    The official code shuffles the negatives table once per thread with that thread's RNG.
    """
    for i in range(table.shape[0] - 1, 0, -1):
        j = _randint(rng_state, i + 1)
        tmp = table[i]
        table[i] = table[j]
        table[j] = tmp


@njit(nogil=True, cache=True, inline="always")
def _bigram_row(a, b, nwords, bucket):
    h = np.uint64(a) * np.uint64(NGRAM_HASH_MULTIPLIER) + np.uint64(b)
    return np.int64(nwords) + np.int64(h % np.uint64(bucket))


@njit(nogil=True, cache=True, inline="always")
def _sigmoid(x, sig_table, exact):
    if exact:
        return np.float32(1.0) / (np.float32(1.0) + np.exp(-x))
    if x < -MAX_SIGMOID:
        return np.float32(0.0)
    if x > MAX_SIGMOID:
        return np.float32(1.0)
    i = np.int64((x + np.float32(MAX_SIGMOID)) * np.float32(SIGMOID_TABLE_SIZE / MAX_SIGMOID / 2))
    return sig_table[i]


@njit(nogil=True, cache=True, inline="always")
def _log(x, log_table, exact):
    if exact:
        return np.log(max(x, np.float32(1e-30)))
    if x > 1.0:
        return np.float32(0.0)
    return log_table[np.int64(x * np.float32(LOG_TABLE_SIZE))]


@njit(nogil=True, cache=True)
def _prox_row(mat, row, alpha):
    """Soft-threshold ``mat[row]`` by ``alpha`` (paper eq. 6)."""
    for d in range(mat.shape[1]):
        v = mat[row, d]
        if v > alpha:
            mat[row, d] = v - alpha
        elif v < -alpha:
            mat[row, d] = v + alpha
        else:
            mat[row, d] = np.float32(0.0)


@njit(nogil=True, cache=True)
def _negative_sampling(
    wo, hidden, grad, target, neg, neg_table, neg_pos, lr, sig_table, log_table, exact, l1
):
    """Official ``Model::negativeSampling``: ``neg + 1`` logistic steps; returns the loss.

    ``grad`` (zeroed here) receives ``sum_k alpha_k * wo[k]`` with ``wo`` rows read before their
    own update; ``wo`` rows are updated at once.
    """
    dim = hidden.shape[0]
    for d in range(dim):
        grad[d] = np.float32(0.0)
    loss = 0.0
    ntable = neg_table.shape[0]
    pos = neg_pos[0]
    # rows the next target will most likely use (this target's were hinted by the last call)
    _prefetch_negatives(wo, neg_table, pos + neg, neg)
    for k in range(neg + 1):
        if k == 0:
            row = target
            label = np.float32(1.0)
        else:
            row = neg_table[pos]
            pos += 1
            if pos == ntable:
                pos = 0
            while row == target:
                row = neg_table[pos]
                pos += 1
                if pos == ntable:
                    pos = 0
            label = np.float32(0.0)
        score = _row_dot(wo, row, hidden)
        p = _sigmoid(score, sig_table, exact)
        alpha = lr * (label - p)
        for d in range(dim):
            grad[d] = _muladd(alpha, wo[row, d], grad[d])
            wo[row, d] = _muladd(alpha, hidden[d], wo[row, d])
        if l1 > 0.0:
            _prox_row(wo, row, np.float32(l1) * lr)
        if k == 0:
            loss -= _log(p, log_table, exact)
        else:
            loss -= _log(np.float32(1.0) - p, log_table, exact)
    neg_pos[0] = pos
    return loss


@njit(nogil=True, cache=True, inline="always")
def _draw_dropout(L, k, rng_state, disc, dropped):
    """Official dropout draws; returns how many positions were marked (incl. the past-end one)."""
    ndrop = 0
    while ndrop < k and L - ndrop > 2:
        p = 1 + _randint(rng_state, L)
        if disc[p] == 0:
            disc[p] = 1
            dropped[ndrop] = p
            ndrop += 1
    return ndrop


@njit(nogil=True, cache=True)
def _sentence_target_mode(
    w,
    L,
    wi,
    wo,
    keep_prob,
    target_ok,
    neg_table,
    neg_pos,
    rng_state,
    sig_table,
    log_table,
    nwords,
    bucket,
    word_ngrams,
    dropout_k,
    neg,
    placeholder,
    lr,
    exclude_target,
    exact,
    l1,
    ws,
):
    line, ctx, disc, dropped, hidden, grad = ws
    dim = wi.shape[1]
    loss = 0.0
    ntargets = 0
    for t in range(L):
        u = _uniform(rng_state)
        wt = w[t]
        if u > keep_prob[wt] or target_ok[wt] == 0:
            continue
        ndrop = 0
        if word_ngrams > 1 and dropout_k > 0:
            ndrop = _draw_dropout(L, dropout_k, rng_state, disc, dropped)
        for j in range(L):
            line[j] = w[j]
        line[t] = placeholder
        n = 0
        for j in range(L):
            if j == t and exclude_target:
                continue
            ctx[n] = line[j]
            n += 1
        if word_ngrams > 1:
            for i in range(L):
                if disc[i] != 0 or (exclude_target and i == t):
                    continue
                h = np.uint64(line[i])
                jmax = min(L, i + word_ngrams)
                for j in range(i + 1, jmax):
                    if disc[j] != 0 or (exclude_target and j == t):
                        break
                    h = h * np.uint64(NGRAM_HASH_MULTIPLIER) + np.uint64(line[j])
                    ctx[n] = np.int64(nwords) + np.int64(h % np.uint64(bucket))
                    n += 1
        for q in range(ndrop):
            disc[dropped[q]] = 0
        if n == 0:
            continue
        _prefetch_row(wo, wt)
        for c in range(n):
            _prefetch_row(wi, ctx[c])
        for d in range(dim):
            hidden[d] = np.float32(0.0)
        for c in range(n):
            r = ctx[c]
            for d in range(dim):
                hidden[d] += wi[r, d]
        inv = np.float32(1.0) / np.float32(n)
        for d in range(dim):
            hidden[d] *= inv
        loss += _negative_sampling(
            wo, hidden, grad, wt, neg, neg_table, neg_pos, lr, sig_table, log_table, exact, l1
        )
        ntargets += 1
        for d in range(dim):
            grad[d] *= inv
        for c in range(n):
            r = ctx[c]
            for d in range(dim):
                wi[r, d] += grad[d]
            if l1 > 0.0:
                _prox_row(wi, r, np.float32(l1) * lr * inv)
    return loss, ntargets


@njit(nogil=True, cache=True)
def _sentence_sentence_mode(
    w,
    L,
    wi,
    wo,
    keep_prob,
    target_ok,
    neg_table,
    neg_pos,
    rng_state,
    sig_table,
    log_table,
    nwords,
    bucket,
    word_ngrams,
    dropout_k,
    neg,
    placeholder,
    lr,
    exclude_target,
    exact,
    l1,
    ws,
):
    (
        bid,
        disc,
        dropped,
        removed,
        pend_row,
        pend_t,
        is_tgt,
        c_set,
        A,
        C,
        As,
        Cs,
        S,
        G,
        hidden,
        grad,
    ) = ws
    dim = wi.shape[1]
    bigrams = word_ngrams > 1
    nslots = L - 1 if bigrams else 0
    # sum of every feature row of the full sentence, from wi as it is now
    for i in range(nslots):
        r = _bigram_row(w[i], w[i + 1], nwords, bucket)
        bid[i] = r
        c_set[i] = 0
        _prefetch_row(wi, r)
    for j in range(L):
        _prefetch_row(wi, w[j])
        is_tgt[j] = 0
    for d in range(dim):
        S[d] = np.float32(0.0)
        G[d] = np.float32(0.0)
    for j in range(L):
        r = w[j]
        for d in range(dim):
            S[d] += wi[r, d]
    for i in range(nslots):
        r = bid[i]
        for d in range(dim):
            S[d] += wi[r, d]
    Gs = 0.0
    npend = 0
    loss = 0.0
    ntargets = 0
    for t in range(L):
        u = _uniform(rng_state)
        wt = w[t]
        if u > keep_prob[wt] or target_ok[wt] == 0:
            continue
        _prefetch_row(wo, wt)
        if bigrams and not exclude_target:
            if t > 0:
                _prefetch_row(wi, _bigram_row(w[t - 1], placeholder, nwords, bucket))
            if t + 1 < L:
                _prefetch_row(wi, _bigram_row(placeholder, w[t + 1], nwords, bucket))
        ndrop = 0
        if bigrams and dropout_k > 0:
            ndrop = _draw_dropout(L, dropout_k, rng_state, disc, dropped)
        # context sum = S - target row (+ placeholder row)
        for d in range(dim):
            hidden[d] = S[d] - wi[wt, d]
        n = L - 1
        if not exclude_target:
            for d in range(dim):
                hidden[d] += wi[placeholder, d]
            n = L
        nrem = 0
        if bigrams:
            n += nslots
            for i in range(t - 1, t + 1):
                if i < 0 or i >= nslots:
                    continue
                r = bid[i]
                for d in range(dim):
                    hidden[d] -= wi[r, d]
                n -= 1
                if (not exclude_target) and disc[i] == 0 and disc[i + 1] == 0:
                    if i == t - 1:
                        r = _bigram_row(w[t - 1], placeholder, nwords, bucket)
                    else:
                        r = _bigram_row(placeholder, w[t + 1], nwords, bucket)
                    for d in range(dim):
                        hidden[d] += wi[r, d]
                    n += 1
                    pend_row[npend] = r
                    pend_t[npend] = t
                    npend += 1
            # slots removed by dropout that do not touch the target, each counted once
            for q in range(ndrop):
                p = dropped[q]
                if p >= L:
                    continue
                i = p - 1
                if i >= 0 and i != t - 1 and i != t and disc[i] == 0:
                    removed[nrem] = i
                    nrem += 1
                i = p
                if i < nslots and i != t - 1 and i != t:
                    removed[nrem] = i
                    nrem += 1
            for q in range(nrem):
                r = bid[removed[q]]
                for d in range(dim):
                    hidden[d] -= wi[r, d]
            n -= nrem
        for q in range(ndrop):
            disc[dropped[q]] = 0
        inv = np.float32(1.0) / np.float32(n)
        for d in range(dim):
            hidden[d] *= inv
        loss += _negative_sampling(
            wo, hidden, grad, wt, neg, neg_table, neg_pos, lr, sig_table, log_table, exact, l1
        )
        ntargets += 1
        # deferred share of this target: a_t = g_t / n_t
        for d in range(dim):
            a = grad[d] * inv
            A[t, d] = a
            G[d] += a
        is_tgt[t] = 1
        s_t = np.float32(l1) * lr * inv
        As[t] = s_t
        Gs += s_t
        for q in range(nrem):
            i = removed[q]
            if c_set[i] == 0:
                c_set[i] = 1
                Cs[i] = s_t
                for d in range(dim):
                    C[i, d] = A[t, d]
            else:
                Cs[i] += s_t
                for d in range(dim):
                    C[i, d] += A[t, d]
    if ntargets == 0:
        return loss, ntargets
    # apply the deferred updates: every row gets G minus the shares of the targets that lacked it
    for j in range(L):
        r = w[j]
        if is_tgt[j] != 0:
            for d in range(dim):
                wi[r, d] += G[d] - A[j, d]
            alpha = Gs - As[j]
        else:
            for d in range(dim):
                wi[r, d] += G[d]
            alpha = Gs
        if l1 > 0.0:
            _prox_row(wi, r, np.float32(alpha))
    if not exclude_target:
        for d in range(dim):
            wi[placeholder, d] += G[d]
        if l1 > 0.0:
            _prox_row(wi, placeholder, np.float32(Gs))
    for i in range(nslots):
        r = bid[i]
        for d in range(dim):
            grad[d] = G[d]
        alpha = Gs
        if is_tgt[i] != 0:
            for d in range(dim):
                grad[d] -= A[i, d]
            alpha -= As[i]
        if is_tgt[i + 1] != 0:
            for d in range(dim):
                grad[d] -= A[i + 1, d]
            alpha -= As[i + 1]
        if c_set[i] != 0:
            for d in range(dim):
                grad[d] -= C[i, d]
            alpha -= Cs[i]
        for d in range(dim):
            wi[r, d] += grad[d]
        if l1 > 0.0:
            _prox_row(wi, r, np.float32(alpha))
    for q in range(npend):
        r = pend_row[q]
        t = pend_t[q]
        for d in range(dim):
            wi[r, d] += A[t, d]
        if l1 > 0.0:
            _prox_row(wi, r, np.float32(As[t]))
    return loss, ntargets


@njit(nogil=True, cache=True, inline="always")
def _class_of(row, hkey, hval, hgen, gen, crow, counter):
    """Class id of matrix row ``row`` within the current sentence (open addressing)."""
    mask = hkey.shape[0] - 1
    slot = np.int64((np.uint64(row) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(32)) & mask
    while True:
        if hgen[slot] != gen:
            hgen[slot] = gen
            hkey[slot] = row
            c = counter[0]
            hval[slot] = c
            crow[c] = row
            counter[0] = c + 1
            return c
        if hkey[slot] == row:
            return hval[slot]
        slot = (slot + 1) & mask


@njit(nogil=True, cache=True)
def _sentence_target_fast(
    w,
    L,
    wi,
    wo,
    keep_prob,
    target_ok,
    neg_table,
    neg_pos,
    rng_state,
    sig_table,
    log_table,
    nwords,
    bucket,
    word_ngrams,
    dropout_k,
    neg,
    placeholder,
    lr,
    exclude_target,
    exact,
    ws,
):
    """Official per-target semantics without rereading the context for every target.

    Rows are grouped by distinct matrix row ("classes"). With ``mult[c]`` the multiplicity of
    class ``c`` among the sentence's full feature list, every row's current value is
    ``Y[c] + mult[c] * G`` (``G``: sum of the targets' shares ``a_t = g_t / n_t`` so far; ``Y``
    starts as the row and takes the corrections of the targets whose context lacked or added an
    occurrence), and the sum ``S`` of the full feature list grows by ``a_t * sum_c
    mult[c] * mult_t[c]`` after target ``t``. The context sum of a target is ``S`` plus its few
    differences from the full list, so each target reads O(neg + dropout_k) rows, and the rows
    are written once, at the end of the sentence. Equal to the per-target update in exact
    arithmetic (including repeated words and colliding n-gram buckets).
    """
    (
        hkey,
        hval,
        hgen,
        gen,
        counter,
        cls,
        crow,
        mult,
        inited,
        Y,
        V0c,
        disc,
        dropped,
        rem_c,
        add_c,
        S,
        G,
        hidden,
        grad,
    ) = ws
    dim = wi.shape[1]
    bigrams = word_ngrams > 1
    ns = L - 1 if bigrams else 0
    gen[0] += 1
    g = gen[0]
    counter[0] = 0
    base_p = L + ns
    base_l = base_p + 1
    base_r = base_l + ns
    for i in range(ns):
        r = _bigram_row(w[i], w[i + 1], nwords, bucket)
        _prefetch_row(wi, r)
        cls[L + i] = _class_of(r, hkey, hval, hgen, g, crow, counter)
    for j in range(L):
        _prefetch_row(wi, w[j])
        cls[j] = _class_of(w[j], hkey, hval, hgen, g, crow, counter)
    cls[base_p] = _class_of(placeholder, hkey, hval, hgen, g, crow, counter)
    if bigrams and not exclude_target:
        for t in range(1, L):
            cls[base_l + t - 1] = _class_of(
                _bigram_row(w[t - 1], placeholder, nwords, bucket),
                hkey,
                hval,
                hgen,
                g,
                crow,
                counter,
            )
        for t in range(L - 1):
            cls[base_r + t] = _class_of(
                _bigram_row(placeholder, w[t + 1], nwords, bucket),
                hkey,
                hval,
                hgen,
                g,
                crow,
                counter,
            )
    nclass = counter[0]
    for c in range(nclass):
        mult[c] = 0
        inited[c] = 0
    for k in range(L + ns):
        mult[cls[k]] += 1
    Q = 0
    for d in range(dim):
        S[d] = np.float32(0.0)
        G[d] = np.float32(0.0)
    for c in range(nclass):
        m = mult[c]
        if m > 0:
            Q += m * m
            r = crow[c]
            fm = np.float32(m)
            for d in range(dim):
                v = wi[r, d]
                Y[c, d] = v
                V0c[c, d] = v
                S[d] += fm * v
            inited[c] = 1
    loss = 0.0
    ntargets = 0
    for t in range(L):
        u = _uniform(rng_state)
        wt = w[t]
        if u > keep_prob[wt] or target_ok[wt] == 0:
            continue
        _prefetch_row(wo, wt)
        ndrop = 0
        if bigrams and dropout_k > 0:
            ndrop = _draw_dropout(L, dropout_k, rng_state, disc, dropped)
        nrem = 0
        nadd = 0
        rem_c[nrem] = cls[t]
        nrem += 1
        n = L - 1
        if not exclude_target:
            add_c[nadd] = cls[base_p]
            nadd += 1
            n = L
        if bigrams:
            n += ns
            for i in range(t - 1, t + 1):
                if i < 0 or i >= ns:
                    continue
                rem_c[nrem] = cls[L + i]
                nrem += 1
                n -= 1
                if (not exclude_target) and disc[i] == 0 and disc[i + 1] == 0:
                    if i == t - 1:
                        add_c[nadd] = cls[base_l + t - 1]
                    else:
                        add_c[nadd] = cls[base_r + t]
                    nadd += 1
                    n += 1
            for q in range(ndrop):
                p = dropped[q]
                if p >= L:
                    continue
                i = p - 1
                if i >= 0 and i != t - 1 and i != t and disc[i] == 0:
                    rem_c[nrem] = cls[L + i]
                    nrem += 1
                    n -= 1
                i = p
                if i < ns and i != t - 1 and i != t:
                    rem_c[nrem] = cls[L + i]
                    nrem += 1
                    n -= 1
        for q in range(ndrop):
            disc[dropped[q]] = 0
        coef = 0
        for q in range(nadd):
            c = add_c[q]
            coef += mult[c]
            if inited[c] == 0:
                r = crow[c]
                for d in range(dim):
                    v = wi[r, d]
                    Y[c, d] = v
                    V0c[c, d] = v
                inited[c] = 1
        for q in range(nrem):
            coef -= mult[rem_c[q]]
        fc = np.float32(coef)
        for d in range(dim):
            hidden[d] = S[d] + fc * G[d]
        for q in range(nadd):
            c = add_c[q]
            for d in range(dim):
                hidden[d] += Y[c, d]
        for q in range(nrem):
            c = rem_c[q]
            for d in range(dim):
                hidden[d] -= Y[c, d]
        inv = np.float32(1.0) / np.float32(n)
        for d in range(dim):
            hidden[d] *= inv
        loss += _negative_sampling(
            wo, hidden, grad, wt, neg, neg_table, neg_pos, lr, sig_table, log_table, exact, 0.0
        )
        ntargets += 1
        fm = np.float32(Q + coef)
        for d in range(dim):
            a = grad[d] * inv
            grad[d] = a
            S[d] += fm * a
            G[d] += a
        for q in range(nrem):
            c = rem_c[q]
            for d in range(dim):
                Y[c, d] -= grad[d]
        for q in range(nadd):
            c = add_c[q]
            for d in range(dim):
                Y[c, d] += grad[d]
    if ntargets == 0:
        return loss, ntargets
    for c in range(nclass):
        if inited[c] == 0:
            continue
        r = crow[c]
        fm = np.float32(mult[c])
        for d in range(dim):
            wi[r, d] += fm * G[d] + (Y[c, d] - V0c[c, d])
    return loss, ntargets


def _fast_workspace(max_len, dim, dropout_k):
    """Scratch arrays of :func:`_sentence_target_fast` for sentences of up to ``max_len``."""
    k = max(dropout_k, 1)
    nf = 4 * max_len + 1
    hsize = 16
    while hsize < 2 * nf:
        hsize *= 2
    z, i8, u1, f4 = np.zeros, np.int64, np.uint8, np.float32
    return (
        z(hsize, i8),
        z(hsize, i8),
        z(hsize, i8),
        z(1, i8),
        z(1, i8),
        z(nf, i8),
        z(nf, i8),
        z(nf, i8),
        z(nf, u1),
        z((nf, dim), f4),
        z((nf, dim), f4),
        z(max_len + 1, u1),
        z(k, i8),
        z(3 + 2 * k, i8),
        z(3, i8),
        z(dim, f4),
        z(dim, f4),
        z(dim, f4),
        z(dim, f4),
    )


def _naive_workspace(max_len, dim, dropout_k, word_ngrams):
    """Scratch arrays of :func:`_sentence_target_mode`."""
    k = max(dropout_k, 1)
    z, i8, u1, f4 = np.zeros, np.int64, np.uint8, np.float32
    return (
        z(max_len, i8),
        z(max_len * max(word_ngrams, 1), i8),
        z(max_len + 1, u1),
        z(k, i8),
        z(dim, f4),
        z(dim, f4),
    )


def _sentence_workspace(max_len, dim, dropout_k):
    """Scratch arrays of :func:`_sentence_sentence_mode`."""
    k = max(dropout_k, 1)
    ns = max_len
    z, i8, u1, f4 = np.zeros, np.int64, np.uint8, np.float32
    return (
        z(ns, i8),
        z(max_len + 1, u1),
        z(k, i8),
        z(2 * k, i8),
        z(2 * ns, i8),
        z(2 * ns, i8),
        z(ns, u1),
        z(ns, u1),
        z((ns, dim), f4),
        z((ns, dim), f4),
        z(ns, f4),
        z(ns, f4),
        z(dim, f4),
        z(dim, f4),
        z(dim, f4),
        z(dim, f4),
    )


def train_job(
    tokens,
    offsets,
    first,
    last,
    wi,
    wo,
    keep_prob,
    target_ok,
    neg_table,
    neg_pos,
    rng_state,
    sig_table,
    log_table,
    nwords,
    bucket,
    word_ngrams,
    dropout_k,
    neg,
    placeholder,
    lr0,
    lr_update_rate,
    tokens_before,
    total_tokens,
    mode,
    exclude_target,
    exact_sigmoid,
    l1,
    stats,
    stop=None,
):
    """Train on sentences ``first .. last-1`` of a token-id corpus; update ``wi``/``wo`` in place.

    Calls the compiled job loop of the one sentence kernel ``mode`` needs (each is compiled,
    or loaded from numba's cache, only when first used), releasing the GIL.

    Parameters
    ----------
    tokens : ndarray of shape (n_tokens,), int32
        In-vocabulary word ids of the whole corpus, sentence after sentence.
    offsets : ndarray of shape (n_sentences + 1,), int64
        Sentence ``s`` is ``tokens[offsets[s]:offsets[s + 1]]``.
    first, last : int
        Sentence range of this job.
    wi : ndarray of shape (nwords + bucket, dim), float32
        Input (source) matrix, shared between threads.
    wo : ndarray of shape (nwords, dim), float32
        Output (target) matrix, shared between threads.
    keep_prob : ndarray of shape (nwords,), float32
        Target keep probability (official discard table).
    target_ok : ndarray of shape (nwords,), uint8
        1 where the word count is ``>= min_count_label``.
    neg_table : ndarray of shape (table_size,), int32
        This thread's shuffled count^0.5 negatives table.
    neg_pos : ndarray of shape (1,), int64
        This thread's cyclic position in ``neg_table`` (updated).
    rng_state : ndarray of shape (1,), uint64
        This thread's SplitMix64 state (updated).
    sig_table, log_table : ndarray of shape (513,), float32
        From :func:`sigmoid_table` and :func:`log_table`.
    nwords, bucket, word_ngrams, dropout_k, neg, placeholder : int
        Vocabulary size, n-gram buckets, n-gram order, dropout K, negatives, placeholder id.
    lr0 : float
        Initial learning rate.
    lr_update_rate : int
        The learning rate is refreshed after more than this many tokens.
    tokens_before : int
        Tokens (over all epochs) that precede this job in the training stream.
    total_tokens : int
        Tokens of all epochs; the learning rate reaches 0 there and no sentence starts after.
    mode : int
        :data:`MODE_TARGET`, :data:`MODE_SENTENCE` (needs ``word_ngrams <= 2``) or
        :data:`MODE_TARGET_NAIVE`.
    exclude_target : bool
        Paper variant: the target is removed from its context instead of replaced.
    exact_sigmoid : bool
        Use exact sigmoid/log instead of the official tables.
    l1 : float
        L1 proximal weight tau (0 disables it).
    stats : ndarray of shape (N_STATS,), float64
        This thread's tallies: loss sum, targets, tokens, last learning rate (incremented).
    stop : ndarray of shape (1,), uint8, optional
        Read before each sentence: the job returns early once ``stop[0]`` is non-zero (set by
        another thread on Ctrl-C or SIGTERM), so a long job never delays the end of a run by
        more than one sentence.
    """
    if stop is None:
        stop = np.zeros(1, np.uint8)
    job, ws = _job_and_workspace(
        mode, l1, word_ngrams, offsets, first, last, wi.shape[1], dropout_k
    )
    return job(
        tokens,
        offsets,
        first,
        last,
        wi,
        wo,
        keep_prob,
        target_ok,
        neg_table,
        neg_pos,
        rng_state,
        sig_table,
        log_table,
        nwords,
        bucket,
        word_ngrams,
        dropout_k,
        neg,
        placeholder,
        lr0,
        lr_update_rate,
        tokens_before,
        total_tokens,
        exclude_target,
        exact_sigmoid,
        l1,
        stats,
        stop,
        ws,
    )


def check_job_size(neg, nwords):
    """Refuse settings that make one sentence's work unbounded by the data: more negatives per
    target than the vocabulary has words (``-neg 100000000`` ran for minutes per sentence, and a
    job sees a stop request only between sentences). ``nwords`` 0 (before the vocabulary pass)
    checks nothing.

    Raises
    ------
    ValueError
        ``neg > max(nwords, 10)``; the message gives the largest value that is accepted.
    """
    limit = max(nwords, 10)  # the official default, 10, is always accepted
    if nwords and neg > limit:
        raise ValueError(
            f"neg={neg} is more negatives per target than the vocabulary has words "
            f"({nwords}); each target would meet the same words many times over: use "
            f"neg <= {limit} (the paper's and the official default: 10)"
        )


_JOBS: dict = {}
_MODE_ARG = train_job.__code__.co_varnames.index("mode")  # the job loop: all others, then ws


def _job_and_workspace(mode, l1, word_ngrams, offsets, first, last, dim, dropout_k):
    """The job loop these settings call (made on first use) and its scratch arrays.

    The scratch arrays come from numpy: building them in compiled code cost 1-2 s of a first
    run's compiling (19 ``np.zeros`` typed and lowered) for no speed.
    """
    naive = mode == MODE_TARGET_NAIVE or (mode == MODE_TARGET and (l1 > 0.0 or word_ngrams > 2))
    variant = "naive" if naive else ("fast" if mode == MODE_TARGET else "sentence")
    job = _JOBS.get(variant)
    if job is None:
        job = _JOBS[variant] = _make_job(variant)
    max_len = max(int(np.diff(offsets[first : last + 1]).max(initial=1)), 1)
    if variant == "fast":
        return job, _fast_workspace(max_len, dim, dropout_k)
    if variant == "naive":
        return job, _naive_workspace(max_len, dim, dropout_k, word_ngrams)
    return job, _sentence_workspace(max_len, dim, dropout_k)


def _probe_args(mode, l1, word_ngrams):
    """Arguments of :func:`train_job` on tiny arrays of the real argument types."""
    return (
        np.zeros(0, np.int32),
        np.zeros(1, np.int64),
        0,
        0,
        np.zeros((2, 1), np.float32),
        np.zeros((1, 1), np.float32),
        np.ones(1, np.float32),
        np.zeros(1, np.uint8),
        np.zeros(1, np.int32),
        np.zeros(1, np.int64),
        rng_initial_state(1, 0),
        sigmoid_table(),
        log_table(),
        1,
        1,
        int(word_ngrams),
        0,
        1,
        0,
        0.1,
        100,
        0,
        1,
        mode,
        False,
        False,
        float(l1),
        np.zeros(N_STATS),
        np.zeros(1, np.uint8),
    )


def compile_job(mode, l1=0.0, word_ngrams=2):
    """Compile (or load from numba's cache) the kernels a run with these settings calls:
    the job loop :func:`train_job` picks and :func:`shuffle_table` (on tiny arrays of the
    real argument types)."""
    train_job(*_probe_args(mode, l1, word_ngrams))
    shuffle_table(np.zeros(1, np.int32), rng_initial_state(1, 0))


def job_is_cached(mode, l1=0.0, word_ngrams=2):
    """Whether numba's on-disk cache already holds the job loop (and shuffle) these settings
    call, i.e. :func:`compile_job` would load rather than compile (True when unknown)."""
    from sentvec._jit import is_cached

    args = _probe_args(mode, l1, word_ngrams)
    job, ws = _job_and_workspace(mode, l1, word_ngrams, args[1], 0, 0, 1, 0)
    return is_cached(job, args[:_MODE_ARG] + args[_MODE_ARG + 1 :] + (ws,)) and is_cached(
        shuffle_table, (np.zeros(1, np.int32), rng_initial_state(1, 0))
    )


def _make_job(variant):
    """The compiled job loop of one sentence kernel; the others are pruned before typing
    (``FAST`` and ``NAIVE`` are compile-time constants), so a first run compiles one kernel."""
    FAST = variant == "fast"
    NAIVE = variant == "naive"

    @njit(nogil=True, cache=True)
    def job(
        tokens,
        offsets,
        first,
        last,
        wi,
        wo,
        keep_prob,
        target_ok,
        neg_table,
        neg_pos,
        rng_state,
        sig_table,
        log_table,
        nwords,
        bucket,
        word_ngrams,
        dropout_k,
        neg,
        placeholder,
        lr0,
        lr_update_rate,
        tokens_before,
        total_tokens,
        exclude_target,
        exact_sigmoid,
        l1,
        stats,
        stop,
        ws,
    ):
        flushed = 0
        unflushed = 0
        loss = 0.0
        ntargets = 0
        lr = lr0
        for s in range(first, last):
            if tokens_before + flushed + unflushed >= total_tokens:
                break  # official trainThread: stop once epoch * ntokens tokens are processed
            if stop[0] != 0:
                break  # Ctrl-C / SIGTERM: the run is being stopped
            progress = (tokens_before + flushed) / total_tokens
            lr = lr0 * (1.0 - progress)
            if lr < 0.0:
                lr = 0.0
            a = offsets[s]
            L = offsets[s + 1] - a
            if L > 1:
                w = tokens[a : a + L]
                lr32 = np.float32(lr)
                if FAST:
                    sl, st = _sentence_target_fast(
                        w,
                        L,
                        wi,
                        wo,
                        keep_prob,
                        target_ok,
                        neg_table,
                        neg_pos,
                        rng_state,
                        sig_table,
                        log_table,
                        nwords,
                        bucket,
                        word_ngrams,
                        dropout_k,
                        neg,
                        placeholder,
                        lr32,
                        exclude_target,
                        exact_sigmoid,
                        ws,
                    )
                elif NAIVE:
                    sl, st = _sentence_target_mode(
                        w,
                        L,
                        wi,
                        wo,
                        keep_prob,
                        target_ok,
                        neg_table,
                        neg_pos,
                        rng_state,
                        sig_table,
                        log_table,
                        nwords,
                        bucket,
                        word_ngrams,
                        dropout_k,
                        neg,
                        placeholder,
                        lr32,
                        exclude_target,
                        exact_sigmoid,
                        l1,
                        ws,
                    )
                else:
                    sl, st = _sentence_sentence_mode(
                        w,
                        L,
                        wi,
                        wo,
                        keep_prob,
                        target_ok,
                        neg_table,
                        neg_pos,
                        rng_state,
                        sig_table,
                        log_table,
                        nwords,
                        bucket,
                        word_ngrams,
                        dropout_k,
                        neg,
                        placeholder,
                        lr32,
                        exclude_target,
                        exact_sigmoid,
                        l1,
                        ws,
                    )
                loss += sl
                ntargets += st
            unflushed += L
            if unflushed > lr_update_rate:
                flushed += unflushed
                unflushed = 0
        stats[STAT_LOSS] += loss
        stats[STAT_TARGETS] += ntargets
        stats[STAT_TOKENS] += flushed + unflushed
        stats[STAT_LR] = lr
        return flushed + unflushed

    return job
