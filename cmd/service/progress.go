package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// indexProgress returns what shows a build of the search index on w
// (store.OnIndexProgress): one line rewritten in place as the build goes
// on, then a final line. nil, so nothing is shown, when w is not a
// terminal: a log or a pipe gets no progress lines.
func indexProgress(w io.Writer) func(done, total int64) {
	if !isTerminal(w) {
		return nil
	}
	var mu sync.Mutex
	var start time.Time
	return func(done, total int64) {
		mu.Lock()
		defer mu.Unlock()
		if done == 0 {
			start = time.Now()
		}
		// \r goes back to the line's start; \x1b[K clears what is left
		// of a longer line before.
		fmt.Fprintf(w, "\r%s\x1b[K", progressLine(done, total, time.Since(start)))
		if done >= total {
			fmt.Fprintln(w)
		}
	}
}

// progressBar is how many characters the bar of progressLine takes.
const progressBar = 30

// progressLine is the line that shows a build of the search index with
// done of total steps indexed after elapsed: a bar, the percentage, the
// counts and the time, or once done, what was built and how long it took.
func progressLine(done, total int64, elapsed time.Duration) string {
	elapsed = elapsed.Round(time.Second)
	if done >= total {
		return fmt.Sprintf("search index built: %s steps in %s", thousands(total), elapsed)
	}
	filled := int(done * progressBar / total)
	return fmt.Sprintf("building the search index [%s%s] %3d%%  %s of %s steps  %s",
		strings.Repeat("#", filled), strings.Repeat(".", progressBar-filled),
		done*100/total, thousands(done), thousands(total), elapsed)
}
