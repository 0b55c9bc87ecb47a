package graph

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
)

// WriteText prints s for a person: the counts, then each ranking.
func (s *Summary) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	section := func(title string, counts map[string]int) {
		total := 0
		for _, n := range counts {
			total += n
		}
		fmt.Fprintf(tw, "%s\t%12d\n", title, total)
		for _, kv := range sortedCounts(counts) {
			fmt.Fprintf(tw, "  %s\t%12d\n", kv.ID, kv.Hosts)
		}
	}
	section("nodes", s.Nodes)
	section("edges", s.Edges)
	section("hosts probed, by page outcome", s.Outcomes)
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, k := range TopKinds {
		ranked := s.Top[k.Key]
		if k.Key == "linked" {
			fmt.Fprintf(w, "\n%s (distinct hosts linking to each)\n", k.Title)
		} else {
			fmt.Fprintf(w, "\nshared %s (distinct hosts pointing at each)\n", k.Title)
		}
		if len(ranked) == 0 {
			fmt.Fprintln(w, "  none")
			continue
		}
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
		for i, r := range ranked {
			label := r.ID
			if r.Label != "" {
				label += "  (" + r.Label + ")"
			}
			fmt.Fprintf(tw, "%d.\t%d\t  %s\n", i+1, r.Hosts, label)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// sortedCounts lists counts largest first, ties by name.
func sortedCounts(counts map[string]int) []Ranked {
	out := make([]Ranked, 0, len(counts))
	for k, n := range counts {
		out = append(out, Ranked{ID: k, Hosts: n})
	}
	slices.SortFunc(out, func(a, b Ranked) int {
		if c := cmp.Compare(b.Hosts, a.Hosts); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out
}
