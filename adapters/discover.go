package adapters

import (
	"io/fs"
	"os"
	"path/filepath"
)

// Walk goes through the files and folders an adapter's Discover was given,
// leaving the choice of what is a session to the adapter. Each root is made
// absolute. A root that is not a folder goes to visit as it is, with named
// true: the user named it, so an adapter takes it whatever its name. A
// folder root is walked in lexical order and visit sees the root and
// everything below it with named false, except the folders below it whose
// name skipDir (when not nil) accepts, which are not entered; the root
// itself is always entered. Roots that do not exist and entries that cannot
// be read are returned as problems; the walk goes on past them.
func Walk(roots []string, skipDir func(name string) bool, visit func(path string, d fs.DirEntry, named bool)) []Problem {
	var problems []Problem
	for _, root := range roots {
		abs, err := filepath.Abs(root)
		if err != nil {
			problems = append(problems, Problem{Path: root, Message: err.Error()})
			continue
		}
		fi, err := os.Stat(abs)
		if err != nil {
			problems = append(problems, Problem{Path: root, Message: err.Error()})
			continue
		}
		if !fi.IsDir() {
			visit(abs, fs.FileInfoToDirEntry(fi), true)
			continue
		}
		err = filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				problems = append(problems, Problem{Path: p, Message: err.Error()})
				return nil
			}
			if d.IsDir() && p != abs && skipDir != nil && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			visit(p, d, false)
			return nil
		})
		if err != nil {
			problems = append(problems, Problem{Path: root, Message: err.Error()})
		}
	}
	return problems
}
