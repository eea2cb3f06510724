package edit

import (
	"math/bits"
	"sort"
	"strings"

	"github.com/vfsd/vfsd/internal/textmatch"
)

// The closest-region search slides a window of old_string's line count
// over the file and scores each position by the mean similarity of the
// lines paired up (lines paired with nothing, past either end, count 0).
// A line's similarity to another is 1 when they are equal under
// textmatch's loosest pass (trimmed, punctuation folded), and otherwise
// 0.99 × the Dice coefficient of their multisets of bytes and byte pairs
// (the n-th occurrence of an item counting as a member of its own), hashed
// into a 512-bit signature: O(1) per pair of lines once every line's
// signature is computed, so the scan is O(file lines × old lines) cheap
// comparisons, capped by maxComparisons. The first window with the highest
// score wins.

// unequalScale keeps lines that are merely alike below equal ones.
const unequalScale = 0.99

// maxComparisons bounds the line comparisons of the window scan. Past it,
// windows are ranked on an evenly spaced sample of old_string's lines; the
// winner's reported similarity always uses every line.
const maxComparisons = 1 << 21

// signature is a line's key under textmatch.Punct, a hash of it, and the
// multiset of its bytes and byte pairs hashed into 512 bits.
type signature struct {
	key  string
	hash uint64
	set  [8]uint64
	size int // bits set in set
}

// newSignature computes line's signature in one pass over it.
func newSignature(line string) signature {
	s := signature{key: textmatch.Punct.Key(line)}
	// seen counts earlier occurrences of each item (by its hash), so that
	// the n-th occurrence of an item is a different member of the set:
	// "5000" and "500" differ although they hold the same bytes and pairs.
	var seen [512]uint8
	add := func(x uint32) {
		b := hash9(x)
		n := seen[b]
		if n < 255 {
			seen[b]++
		}
		b = hash9(x ^ uint32(n)<<17)
		s.set[b>>6] |= 1 << (b & 63)
	}
	h := uint64(14695981039346656037) // FNV-1a
	var prev uint32
	for i := 0; i < len(s.key); i++ {
		c := uint32(s.key[i])
		h = (h ^ uint64(c)) * 1099511628211
		add(c)
		if i > 0 {
			add(0x10000 | prev<<8 | c)
		}
		prev = c
	}
	s.hash = h
	for _, w := range s.set {
		s.size += bits.OnesCount64(w)
	}
	return s
}

// hash9 hashes x to 9 bits (Fibonacci hashing).
func hash9(x uint32) uint32 { return (x * 2654435761) >> 23 }

// similarity is in [0, 1]; 1 only for equal keys.
func (s *signature) similarity(o *signature) float64 {
	if s.hash == o.hash && s.key == o.key {
		return 1
	}
	if s.size+o.size == 0 {
		return 0
	}
	common := 0
	for i := range s.set {
		common += bits.OnesCount64(s.set[i] & o.set[i])
	}
	return unequalScale * 2 * float64(common) / float64(s.size+o.size)
}

// closest returns the region of lines most similar to pattern, or nil when
// there are no lines. Every alignment of pattern against the file is a
// window of len(pattern) lines; windows may hang over the start or end of
// the file by all but one line (the lines outside count 0), so an
// old_string with a line too many at either end, or longer than the whole
// file, still finds its place. The region is the window's part inside the
// file; the first best window wins.
func closest(lines, pattern []string) *Region {
	n, k := len(lines), len(pattern)
	if n == 0 || k == 0 {
		return nil
	}
	fileSigs := make([]signature, n)
	for i, l := range lines {
		fileSigs[i] = newSignature(l)
	}
	patSigs := make([]signature, k)
	for j, l := range pattern {
		patSigs[j] = newSignature(l)
	}
	// score sums the similarity of the pattern lines js (ascending),
	// placed at file line i, that fall inside the file.
	score := func(i int, js []int) float64 {
		sum := 0.0
		for _, j := range js[sort.SearchInts(js, -i):] {
			if i+j >= n {
				break
			}
			sum += fileSigs[i+j].similarity(&patSigs[j])
		}
		return sum
	}
	every := make([]int, k)
	for j := range every {
		every[j] = j
	}
	sample := every
	first, windows := -(k - 1), n+k-1
	if m := max(1, maxComparisons/windows); m < k {
		sample = make([]int, m)
		for t := range sample {
			sample[t] = t * k / m
		}
	}
	best, bestScore := first, -1.0
	for i := first; i < n; i++ {
		if s := score(i, sample); s > bestScore {
			best, bestScore = i, s
		}
	}
	from, to := max(best, 0), min(best+k, n)
	return &Region{
		StartLine:  from + 1,
		EndLine:    to,
		Text:       strings.Join(lines[from:to], "\n"),
		Similarity: score(best, every) / float64(k),
	}
}
