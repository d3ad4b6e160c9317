"""GumTree-style matching of two flat trees (Falleri et al., ASE'14) and the edit script.

`Matcher` maps seed nodes to variant nodes in three phases; the script module
turns the finished mapping into operations. It works on `FlatTree` arrays
only, never on py-tree-sitter nodes.

Phases, and how each stays near-linear:
1. Top-down: subtrees of equal structural hash are matched, tallest first.
   Only the open frontier is ever bucketed, so identical regions cost one
   comparison. Groups of several isomorphic candidates are resolved by the
   dice similarity of their parents, then by where the seed member would land
   in the variant; groups too large to score are left to recovery. Named
   leaves unique on both sides become hints for bottom-up.
2. Bottom-up: an unmatched inner seed node looks for a variant node of the
   same kind among the ancestors of its matched descendants' partners, and
   takes the best dice >= `min_dice` (or an enclosing candidate when the
   variant wrapped part of the node into a new construct). Descendants matched
   as whole isomorphic subtrees count as one block without being descended
   into, so the cost per node is the size of its *changed* frontier.
3. Recovery: for every pair matched bottom-up (and recursively for pairs it
   creates), the unmatched children between order-preserving anchors are
   aligned: isomorphic subtrees, then same shape, then same kind. GumTree's
   recovery is bounded by subtree size; here it is bounded per gap between
   anchors instead, with an exact table only up to `MAX_LCS_CELLS` cells
   and difflib's matcher beyond, so it can run on every matched pair.
"""

from __future__ import annotations

import sys
from bisect import bisect_left, bisect_right, insort
from itertools import accumulate

from gitreduce.pair.treediff.lcs import heaviest_increasing, lcs
from gitreduce.pair.treediff.model import FlatTree

# Top-down groups of isomorphic subtrees with more candidate pairs than this are
# not scored by their parents' similarity, only by position; beyond the second
# limit they are left to recovery.
MAX_SCORED_PAIRS = 64
MAX_POSITIONAL_PAIRS = 4096


class Matcher:
    """The GumTree phases over two flat trees; `ms`/`mv` are the two directions of the mapping."""

    def __init__(self, seed: FlatTree, variant: FlatTree, min_height: int, min_dice: float) -> None:
        self.s = seed
        self.v = variant
        self.min_height = min_height
        self.min_dice = min_dice
        self.ms = [-1] * len(seed)
        self.mv = [-1] * len(variant)
        # 1 where the seed node was matched as part of an isomorphic subtree match,
        # so its whole subtree maps into its partner's subtree.
        self.clean = bytearray(len(seed))
        # 1 where a seed subtree was left unmatched and unopened by top-down (an
        # ambiguous group): nothing below it is matched until it is itself matched,
        # so walks over matched descendants can skip it.
        self.sealed = bytearray(len(seed))
        self.hints: list[tuple[int, int]] = []
        self.counter: _MatchedCount | None = None

    # -- mapping primitives -------------------------------------------------

    def link(self, a: int, b: int) -> None:
        ms, mv, counter = self.ms, self.mv, self.counter
        old = ms[a]
        if old >= 0 and old != b:
            mv[old] = -1
            if counter is not None:
                counter.lose(old)
        old = mv[b]
        if old >= 0 and old != a:
            ms[old] = -1
        elif old < 0 and counter is not None:
            counter.gain(b)
        ms[a] = b
        mv[b] = a
        self.clean[a] = 0
        self.sealed[a] = 0

    def match_subtree(self, a: int, b: int) -> None:
        """Map isomorphic subtrees node by node; pre-order makes them offset copies."""
        ms, mv, clean = self.ms, self.mv, self.clean
        self.sealed[a] = 0
        lost: list[int] = []
        gained: list[int] = []
        for offset in range(self.s.sizes[a]):
            x = a + offset
            y = b + offset
            old = ms[x]
            if old >= 0 and old != y:
                mv[old] = -1
                lost.append(old)
            old = mv[y]
            if old >= 0 and old != x:
                ms[old] = -1
            elif old < 0:
                gained.append(y)
            ms[x] = y
            mv[y] = x
            clean[x] = 1
        if self.counter is not None:
            for y in gained:
                self.counter.gain(y)
            for y in lost:
                self.counter.lose(y)

    def below(self, a: int) -> list[tuple[int, int]]:
        """(partner, weight) for the matched descendants of seed node `a`.

        A descendant matched as part of an isomorphic subtree stands for its
        whole subtree (weight = size) and is not descended into: its partner's
        subtree is entirely matched, so it lies inside an unmatched variant node
        exactly when its root does. The walk costs the changed frontier only.
        """
        ms, clean, sealed = self.ms, self.clean, self.sealed
        sizes, children = self.s.sizes, self.s.children
        found: list[tuple[int, int]] = []
        stack = list(children[a])
        while stack:
            d = stack.pop()
            partner = ms[d]
            if partner >= 0:
                if clean[d]:
                    found.append((partner, sizes[d]))
                    continue
                found.append((partner, 1))
            elif sealed[d]:
                continue
            stack.extend(children[d])
        return found

    @staticmethod
    def profile(found: list[tuple[int, int]]) -> tuple[list[int], list[int]]:
        """Sorted partner positions and prefix sums of weights, for range counts by bisection."""
        found = sorted(found)
        positions = [partner for partner, _ in found]
        totals = [0]
        running = 0
        for _, weight in found:
            running += weight
            totals.append(running)
        return positions, totals

    def shared(self, profile: tuple[list[int], list[int]], b: int) -> int:
        """How much of the profiled seed subtree maps strictly below variant node `b`."""
        positions, totals = profile
        return (
            totals[bisect_left(positions, b + self.v.sizes[b])]
            - totals[bisect_left(positions, b + 1)]
        )

    # -- phase 1 --------------------------------------------------------------

    def top_down(self) -> None:
        s, v = self.s, self.v
        top = max(s.heights[0], v.heights[0])
        open_s: list[list[int]] = [[] for _ in range(top + 1)]
        open_v: list[list[int]] = [[] for _ in range(top + 1)]
        open_s[s.heights[0]].append(0)
        open_v[v.heights[0]].append(0)
        ambiguous: list[tuple[list[int], list[int]]] = []
        landmarks: list[tuple[int, int]] = []  # (seed end, variant end) of unique matches
        for height in range(top, max(self.min_height, 1) - 1, -1):
            seeds, variants = open_s[height], open_v[height]
            if not seeds or not variants:
                self._open(s, seeds, open_s)
                self._open(v, variants, open_v)
                continue
            groups: dict[tuple[int, int], tuple[list[int], list[int]]] = {}
            for a in seeds:
                groups.setdefault((s.hashes[a], s.sizes[a]), ([], []))[0].append(a)
            for b in variants:
                groups.setdefault((v.hashes[b], v.sizes[b]), ([], []))[1].append(b)
            for group_s, group_v in groups.values():
                if group_s and group_v:
                    if len(group_s) == 1 and len(group_v) == 1:
                        self.match_subtree(group_s[0], group_v[0])
                        landmarks.append((s.ends[group_s[0]], v.ends[group_v[0]]))
                    else:
                        ambiguous.append((group_s, group_v))
                        for a in group_s:
                            self.sealed[a] = 1
                    continue
                self._open(s, group_s, open_s)
                self._open(v, group_v, open_v)
        if ambiguous:
            self._resolve(ambiguous, landmarks)
        for height in range(1, min(self.min_height, top + 1)):
            self._match_unique(open_s[height], open_v[height])

    @staticmethod
    def _open(tree: FlatTree, nodes: list[int], lists: list[list[int]]) -> None:
        heights, children = tree.heights, tree.children
        for node in nodes:
            for child in children[node]:
                lists[heights[child]].append(child)

    def _resolve(
        self, groups: list[tuple[list[int], list[int]]], landmarks: list[tuple[int, int]]
    ) -> None:
        """Match groups of isomorphic candidates greedily, best evidence first.

        Evidence is the dice of the parents (for groups small enough to score
        every pair: each distinct seed parent costs one walk of its changed
        frontier), then the distance between a variant candidate and where the
        seed member would land in the variant, judged from the nearest match
        before it. That keeps copies of repeated code (two `(void*)0` in one
        statement, a file pasted twice) with their own counterparts when
        nothing else tells them apart; relative position in the file is too
        coarse once insertions shift the text. Groups come tallest first and
        their matches become landmarks for the smaller ones. Groups too large
        even for that stay sealed: recovery aligns them inside matched parents.
        """
        s, v, ms, mv = self.s, self.v, self.ms, self.mv
        landmarks.sort()
        profiles: dict[int, tuple[list[int], list[int]]] = {}
        for group_s, group_v in groups:
            pairs = len(group_s) * len(group_v)
            if pairs > MAX_POSITIONAL_PAIRS:
                continue
            scored: list[tuple[float, int, int, int]] = []
            for a in group_s:
                pa = s.parents[a]
                profile = None
                if pairs <= MAX_SCORED_PAIRS and pa >= 0:
                    profile = profiles.get(pa)
                    if profile is None:
                        profile = profiles[pa] = self.profile(self.below(pa))
                start = s.starts[a]
                mark = bisect_right(landmarks, (start, sys.maxsize)) - 1
                landing = start if mark < 0 else landmarks[mark][1] + start - landmarks[mark][0]
                for b in group_v:
                    similarity = 0.0
                    pb = v.parents[b]
                    if profile is not None and pb >= 0:
                        shared = self.shared(profile, pb)
                        similarity = 2.0 * shared / (s.sizes[pa] + v.sizes[pb] - 2)
                    scored.append((-similarity, abs(v.starts[b] - landing), a, b))
            scored.sort()
            for _, _, a, b in scored:
                if ms[a] < 0 and mv[b] < 0:
                    self.match_subtree(a, b)
                    insort(landmarks, (s.ends[a], v.ends[b]))

    def _match_unique(self, seeds: list[int], variants: list[int]) -> None:
        """Small named subtrees unique on both sides: hints for bottom-up, checked at the end.

        Punctuation and keywords are left out: one unique `(` or `,` in each
        changed region says nothing about which statements correspond.
        """
        s, v = self.s, self.v
        named = s.named_kinds
        groups: dict[tuple[int, int], tuple[list[int], list[int]]] = {}
        for a in seeds:
            if s.kinds[a] not in named:
                continue
            groups.setdefault((s.hashes[a], s.sizes[a]), ([], []))[0].append(a)
        for b in variants:
            groups.setdefault((v.hashes[b], v.sizes[b]), ([], []))[1].append(b)
        for group_s, group_v in groups.values():
            if len(group_s) == 1 and len(group_v) == 1:
                self.match_subtree(group_s[0], group_v[0])
                self.hints.append((group_s[0], group_v[0]))

    # -- phase 2 --------------------------------------------------------------

    def bottom_up(self) -> None:
        s, v, ms, mv, clean, sealed = self.s, self.v, self.ms, self.mv, self.clean, self.sealed
        sizes, children = s.sizes, s.children
        # below(node) for processed nodes whose parent is still to come: built from
        # the children's lists, so each frontier entry is produced once per ancestor
        # by list.extend instead of a fresh walk
        pending: dict[int, list[tuple[int, int]]] = {}
        self.counter = _MatchedCount(mv)
        for a in self._unclean_postorder():
            found: list[tuple[int, int]] = []
            for child in children[a]:
                partner = ms[child]
                if partner >= 0 and clean[child]:
                    found.append((partner, sizes[child]))
                    continue
                if partner >= 0:
                    found.append((partner, 1))
                elif sealed[child]:
                    continue
                sub = pending.pop(child, None)
                found.extend(self.below(child) if sub is None else sub)
            if ms[a] < 0 and found:
                b = self._candidate(a, found)
                if b >= 0:
                    self.link(a, b)
                    if self.recover(a, b):
                        found = self.below(a)
            pending[a] = found
        if ms[0] < 0 and mv[0] < 0 and s.kinds[0] == v.kinds[0]:
            self.link(0, 0)
            self.recover(0, 0)

    def _unclean_postorder(self) -> list[int]:
        ms, clean, sealed, children = self.ms, self.clean, self.sealed, self.s.children
        order: list[int] = []
        stack: list[tuple[int, bool]] = [(0, False)]
        while stack:
            node, finished = stack.pop()
            if finished:
                order.append(node)
                continue
            if clean[node] if ms[node] >= 0 else sealed[node]:
                continue
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(children[node]))
        return order

    def _candidate(self, a: int, found: list[tuple[int, int]]) -> int:
        """The variant node to pair with unmatched seed node `a`, or -1.

        Candidates are the unmatched same-kind ancestors of the partners in
        `found` (= below(a)); shared ancestors are climbed once.
        """
        s, v, ms, mv = self.s, self.v, self.ms, self.mv
        kind = s.kinds[a]
        vkinds, vparents = v.kinds, v.parents
        seen: set[int] = set()
        candidates: list[int] = []
        for partner, _ in found:
            node = vparents[partner]
            while node >= 0 and node not in seen:
                seen.add(node)
                if vkinds[node] == kind and mv[node] < 0:
                    candidates.append(node)
                node = vparents[node]
        if not candidates:
            return -1
        profile = self.profile(found)
        counter = self.counter
        assert counter is not None
        own = s.sizes[a] - 1
        scored: list[tuple[float, int, int, int]] = []  # dice, shared, foreign, node
        for b in candidates:
            size = v.sizes[b]
            total = own + size - 1
            shared = self.shared(profile, b)
            similarity = 2.0 * shared / total if total > 0 else 0.0
            if similarity >= self.min_dice:
                foreign = counter.count(b + 1, b + size) - shared
                scored.append((similarity, shared, foreign, b))
        if not scored:
            return -1
        best = max(scored)
        # Dice prefers a block a variant wrapped into a new construct over the old
        # block around it ({ a; if (c) { b; ... } }). An enclosing candidate is
        # better when it holds more of `a`, nothing more that matched elsewhere,
        # and is the parent of the partner of one of a's children (the part left
        # outside the wrapper), rather than gaining a stray deep match.
        _, best_shared, best_foreign, best_node = best
        adopters = {vparents[ms[c]] for c in s.children[a] if ms[c] >= 0}
        for candidate in scored:
            _, shared, foreign, b = candidate
            if (
                b in adopters
                and b < best_node < b + v.sizes[b]
                and foreign <= best_foreign
                and shared > best_shared
                and (shared, candidate[0]) > (best[1], best[0])
            ):
                best = candidate
        return best[3]

    # -- phase 3 --------------------------------------------------------------

    def anchors(self, a: int, b: int) -> list[tuple[int, int]]:
        """Child positions (i, j) matched to each other, the heaviest order-preserving chain.

        When children were reordered, the chain keeps the pairs that carry the
        most matched content, so an identical statement stays in place and the
        edited one counts as moved rather than the other way round.
        """
        ms, vparents, vpositions = self.ms, self.v.parents, self.v.positions
        children = self.s.children[a]
        pairs: list[tuple[int, int]] = []
        for i, child in enumerate(children):
            partner = ms[child]
            if partner >= 0 and vparents[partner] == b:
                pairs.append((i, vpositions[partner]))
        if all(pairs[k][1] < pairs[k + 1][1] for k in range(len(pairs) - 1)):
            return pairs
        weights = []
        for i, _ in pairs:
            child = children[i]
            if self.clean[child]:
                weights.append(self.s.sizes[child])
            else:
                weights.append(1 + self.shared(self.profile(self.below(child)), ms[child]))
        return heaviest_increasing(pairs, weights, len(self.v.children[b]))

    def recover(self, a: int, b: int) -> bool:
        """Align leftover children below a new pair, recursively; whether anything matched."""
        s, v, ms, mv = self.s, self.v, self.ms, self.mv
        changed = False
        work = [(a, b)]
        while work:
            a, b = work.pop()
            seed_children, variant_children = s.children[a], v.children[b]
            if not seed_children or not variant_children:
                continue
            if all(ms[c] >= 0 for c in seed_children) or all(mv[c] >= 0 for c in variant_children):
                continue
            previous_i = previous_j = -1
            bounds = [*self.anchors(a, b), (len(seed_children), len(variant_children))]
            for i, j in bounds:
                gap_s = [c for c in seed_children[previous_i + 1 : i] if ms[c] < 0]
                gap_v = [c for c in variant_children[previous_j + 1 : j] if mv[c] < 0]
                if gap_s and gap_v:
                    changed = self._align(gap_s, gap_v, work) or changed
                previous_i, previous_j = i, j
        return changed

    def _align(self, gap_s: list[int], gap_v: list[int], work: list[tuple[int, int]]) -> bool:
        """Align a gap in order: isomorphic subtrees, then same shape, then same kind.

        Each stage only looks between the pairs the previous one found. Shape
        (kind plus the kinds of the children) is the step GumTree lacks: among
        several same-kind statements it pairs `let mut cur = Slot {..}` with its
        edited self rather than with whichever `let` comes first. Pairs from the
        later stages are not isomorphic, so their own children are queued.
        """
        s, v, ms, mv = self.s, self.v, self.ms, self.mv
        changed = False
        pending = [(gap_s, gap_v, 0)]
        while pending:
            xs, ys, stage = pending.pop()
            xs = [x for x in xs if ms[x] < 0]
            ys = [y for y in ys if mv[y] < 0]
            if not xs or not ys:
                continue
            if stage == 0:
                pairs = lcs(
                    [(s.hashes[x], s.sizes[x]) for x in xs],
                    [(v.hashes[y], v.sizes[y]) for y in ys],
                    [s.sizes[x] for x in xs],
                    [v.sizes[y] for y in ys],
                )
                for i, j in pairs:
                    self.match_subtree(xs[i], ys[j])
            else:
                sizes_s = [s.sizes[x] for x in xs]
                sizes_v = [v.sizes[y] for y in ys]
                if stage == 1:
                    keys_s: list[object] = [_shape(s, x) for x in xs]
                    keys_v: list[object] = [_shape(v, y) for y in ys]
                else:
                    keys_s = [s.kinds[x] for x in xs]
                    keys_v = [v.kinds[y] for y in ys]
                pairs = lcs(keys_s, keys_v, sizes_s, sizes_v)
                for i, j in pairs:
                    self.link(xs[i], ys[j])
                    work.append((xs[i], ys[j]))
            changed = changed or bool(pairs)
            if stage < 2:
                previous_i = previous_j = -1
                for i, j in [*pairs, (len(xs), len(ys))]:
                    pending.append((xs[previous_i + 1 : i], ys[previous_j + 1 : j], stage + 1))
                    previous_i, previous_j = i, j
        return changed

    def drop_stray_hints(self) -> None:
        """Undo unique-leaf matches whose parents did not end up partners.

        They served bottom-up as evidence; kept, they would only report a leaf
        moved across the file, and they hid the leaf from the recovery of its
        own parent, which gets a second chance here.
        """
        s, v, ms, mv = self.s, self.v, self.ms, self.mv
        retry: set[tuple[int, int]] = set()
        for a, b in self.hints:
            if ms[a] != b:
                continue
            pa, pb = s.parents[a], v.parents[b]
            if pa < 0 or pb < 0 or ms[pa] != pb:
                ms[a] = -1
                mv[b] = -1
                self.clean[a] = 0
                if pa >= 0 and ms[pa] >= 0:
                    retry.add((pa, ms[pa]))
                if pb >= 0 and mv[pb] >= 0:
                    retry.add((mv[pb], pb))
        for a, b in sorted(retry):
            if ms[a] == b:
                self.recover(a, b)


class _MatchedCount:
    """Matched variant nodes in a pre-order range: a prefix-sum snapshot plus later changes.

    Bottom-up changes few matches compared with top-down, so sorted lists of
    the changes keep each count at a few bisections.
    """

    def __init__(self, partners: list[int]) -> None:
        self.prefix = list(accumulate((1 if p >= 0 else 0 for p in partners), initial=0))
        self.gained: list[int] = []
        self.lost: list[int] = []

    def gain(self, node: int) -> None:
        insort(self.gained, node)

    def lose(self, node: int) -> None:
        insort(self.lost, node)

    def count(self, low: int, high: int) -> int:
        gained, lost = self.gained, self.lost
        return (
            self.prefix[high]
            - self.prefix[low]
            + bisect_left(gained, high)
            - bisect_left(gained, low)
            - bisect_left(lost, high)
            + bisect_left(lost, low)
        )


def _shape(tree: FlatTree, node: int) -> tuple[int, ...]:
    kinds = tree.kinds
    return (kinds[node], *[kinds[child] for child in tree.children[node]])
