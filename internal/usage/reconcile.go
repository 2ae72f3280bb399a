package usage

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// ReconcileResult is what `app usage reconcile` changed.
type ReconcileResult struct {
	Days    int            `json:"days"`
	From    string         `json:"from"` // first UTC day rebuilt
	To      string         `json:"to"`   // last UTC day rebuilt (today)
	Checked int            `json:"checked"`
	Changes []RollupChange `json:"changes"` // the rollup documents rewritten, in _id order
}

// RollupChange is one rollup document rewritten: its totals of answered calls and its cost of
// unanswered ones (see addRecord), before and after.
type RollupChange struct {
	UserID           string  `json:"userId"`
	Day              string  `json:"day"`
	Before           Summary `json:"before"`
	After            Summary `json:"after"`
	UnansweredBefore float64 `json:"unansweredCostBefore"`
	UnansweredAfter  float64 `json:"unansweredCostAfter"`
}

// logRow is the part of an ai_requests document the rollup is built from, under the names of
// Record and of earlier versions (Old*).
type logRow struct {
	Status         string    `bson:"status"`
	UserID         string    `bson:"userId"`
	Provider       string    `bson:"p"`
	Model          string    `bson:"m"`
	TotalTokens    int64     `bson:"tt"`
	OldProvider    string    `bson:"provider"`
	OldModel       string    `bson:"model"`
	OldTotalTokens int64     `bson:"totalTokens"`
	Cost           float64   `bson:"cost"`
	CreatedAt      time.Time `bson:"createdAt"`
}

// Reconcile rebuilds the rollup of the last `days` UTC days (today included) from the log
// (answered calls, and the cost of the others: see addRecord), rewriting every rollup document that disagrees with it (and emptying
// those the log has nothing for), and returns what it changed. Each rewrite keeps the
// document's batch marks, so a recorder's re-sent batch is still recognised. Returns Invalid
// for days outside 1..366.
func (s *Service) Reconcile(ctx context.Context, days int) (*ReconcileResult, error) {
	if _, err := CheckDays(days); err != nil {
		return nil, err
	}
	defer s.settled.Purge() // Daily reads the repaired days anew
	from, to := s.window(days)
	start, _ := time.Parse(time.DateOnly, from)
	end, _ := time.Parse(time.DateOnly, to)
	end = end.AddDate(0, 0, 1)

	// What the log says, per rollup document and cell.
	want := map[string]*dailyDelta{}
	cur, err := s.requests.Find(ctx, bson.D{
		{Key: "$or", Value: bson.A{bson.D{{Key: "status", Value: StatusSuccess}}, bson.D{{Key: "cost", Value: bson.D{{Key: "$gt", Value: 0}}}}}},
		{Key: "createdAt", Value: bson.D{{Key: "$gte", Value: start}, {Key: "$lt", Value: end}}},
	}, options.Find().SetProjection(bson.D{{Key: "status", Value: 1}, {Key: "userId", Value: 1}, {Key: "p", Value: 1}, {Key: "m", Value: 1},
		{Key: "tt", Value: 1}, {Key: "provider", Value: 1}, {Key: "model", Value: 1}, {Key: "totalTokens", Value: 1},
		{Key: "cost", Value: 1}, {Key: "createdAt", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("usage: read log: %w", err)
	}
	defer cur.Close(ctx)
	for cur.Next(ctx) {
		var r logRow
		if err := cur.Decode(&r); err != nil {
			return nil, fmt.Errorf("usage: decode log: %w", err)
		}
		if r.Provider == "" {
			r.Provider, r.Model, r.TotalTokens = r.OldProvider, r.OldModel, r.OldTotalTokens
		}
		addRecord(want, r.Status, r.UserID, r.CreatedAt, r.Provider, r.Model, r.TotalTokens, r.Cost)
	}
	if err := cur.Err(); err != nil {
		return nil, fmt.Errorf("usage: read log: %w", err)
	}

	// What the rollup says.
	type stored struct {
		userID, day string
		rows        accumulator
		unanswered  int64
		marks       bson.Raw
		legacy      bool
	}
	have := map[string]stored{}
	rc, err := s.daily.Find(ctx, bson.D{{Key: "day", Value: bson.D{{Key: "$gte", Value: from}, {Key: "$lte", Value: to}}}})
	if err != nil {
		return nil, fmt.Errorf("usage: read rollup: %w", err)
	}
	defer rc.Close(ctx)
	for rc.Next(ctx) {
		acc := accumulator{}
		if err := acc.add(rc.Current); err != nil {
			return nil, err
		}
		id, _ := rc.Current.Lookup("_id").StringValueOK()
		user, _ := rc.Current.Lookup("userId").StringValueOK()
		day, _ := rc.Current.Lookup("day").StringValueOK()
		marks, _ := rc.Current.Lookup("w").DocumentOK()
		have[id] = stored{userID: user, day: day, rows: acc, unanswered: unansweredUnits(rc.Current), marks: slices.Clone(marks),
			legacy: legacyShape(rc.Current)}
	}
	if err := rc.Err(); err != nil {
		return nil, fmt.Errorf("usage: read rollup: %w", err)
	}

	res := &ReconcileResult{Days: days, From: from, To: to, Changes: []RollupChange{}}
	ids := slices.Sorted(maps.Keys(want))
	for id := range have {
		if _, ok := want[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	sink := s.sink()
	for _, id := range ids {
		res.Checked++
		w, h := want[id], have[id]
		after := accumulator{}
		user, day := h.userID, h.day
		var unanswered int64
		if w != nil {
			user, day, unanswered = w.userID, w.day, w.unanswered
			for k, m := range w.models {
				r := after.cell(k)
				r.RequestCount, r.TotalTokens, r.Cost = m.Requests, m.TotalTokens, m.Cost
				if err := sink.storeName(ctx, k, m); err != nil {
					return res, fmt.Errorf("usage: %w", err)
				}
			}
		}
		before := h.rows
		if before == nil {
			before = accumulator{}
		}
		if sameRows(before, after) && h.unanswered == unanswered && !h.legacy {
			continue
		}
		doc := bson.D{{Key: "userId", Value: user}, {Key: "day", Value: day}, {Key: "m", Value: cellsDoc(w)}}
		if unanswered != 0 {
			doc = append(doc, bson.E{Key: fieldUnanswered, Value: unanswered})
		}
		if h.marks != nil {
			doc = append(doc, bson.E{Key: "w", Value: h.marks})
		}
		if _, err := s.daily.ReplaceOne(ctx, bson.D{{Key: "_id", Value: id}}, doc, options.Replace().SetUpsert(true)); err != nil {
			return res, fmt.Errorf("usage: rewrite rollup %s: %w", id, err)
		}
		res.Changes = append(res.Changes, RollupChange{UserID: user, Day: day,
			Before: totals(before.rows()), After: totals(after.rows()),
			UnansweredBefore: unitsCost(h.unanswered), UnansweredAfter: unitsCost(unanswered)})
	}
	if err := s.reconcileMonths(ctx, want, from, to); err != nil {
		return res, err
	}
	return res, nil
}

// reconcileMonths rewrites the days from..to of every monthly document that disagrees with
// want (the log's rollup of those days, by rollup _id), leaving its other days alone, then
// moves the monthly documents' first day (sinceID) to the day before from when it was later:
// every day from there on now agrees with the log.
func (s *Service) reconcileMonths(ctx context.Context, want map[string]*dailyDelta, from, to string) error {
	// What the log says: per monthly document, each day's counters ("DD|n" -> value).
	type month struct {
		userID, month string
		cells         map[string]int64
	}
	months := map[string]*month{}
	get := func(userID, day string) *month {
		id := monthlyID(userID, day)
		m := months[id]
		if m == nil {
			m = &month{userID: userID, month: monthOf(day), cells: map[string]int64{}}
			months[id] = m
		}
		return m
	}
	for _, d := range want {
		m := get(d.userID, d.day)
		for _, t := range d.models {
			m.cells[dayCell(d.day, fieldRequests)] += t.Requests
			m.cells[dayCell(d.day, fieldTokens)] += t.TotalTokens
			m.cells[dayCell(d.day, fieldCost)] += costUnits(t.Cost)
		}
	}
	// What the monthly documents of the window say.
	have := map[string]map[string]int64{}
	cur, err := s.monthly.Find(ctx, bson.D{{Key: "month", Value: bson.D{
		{Key: "$gte", Value: monthOf(from)}, {Key: "$lte", Value: monthOf(to)}}}})
	if err != nil {
		return fmt.Errorf("usage: read monthly: %w", err)
	}
	defer cur.Close(ctx)
	for cur.Next(ctx) {
		id, _ := cur.Current.Lookup("_id").StringValueOK()
		user, _ := cur.Current.Lookup("userId").StringValueOK()
		mon, _ := cur.Current.Lookup("month").StringValueOK()
		if len(mon) != len("2006-01") {
			continue
		}
		cells, err := monthlyCells(cur.Current)
		if err != nil {
			return err
		}
		have[id] = cells
		if months[id] == nil {
			months[id] = &month{userID: user, month: mon, cells: map[string]int64{}}
		}
	}
	if err := cur.Err(); err != nil {
		return fmt.Errorf("usage: read monthly: %w", err)
	}
	// Rewrite the window's days where they differ.
	for _, id := range slices.Sorted(maps.Keys(months)) {
		m := months[id]
		set, unset := bson.D{{Key: "userId", Value: m.userID}, {Key: "month", Value: m.month}}, bson.D{}
		changed := false
		for day := range 31 {
			date := fmt.Sprintf("%s-%02d", m.month, day+1)
			if date < from || date > to {
				continue
			}
			for _, f := range []string{fieldRequests, fieldTokens, fieldCost} {
				k := dayCell(date, f)
				w, inWant := m.cells[k]
				h, inHave := have[id][k]
				switch {
				case inWant && (!inHave || w != h):
					set, changed = append(set, bson.E{Key: "d." + k, Value: w}), true
				case !inWant && inHave:
					unset, changed = append(unset, bson.E{Key: "d." + k, Value: ""}), true
				}
			}
		}
		if !changed {
			continue
		}
		update := bson.D{{Key: "$set", Value: set}}
		if len(unset) > 0 {
			update = append(update, bson.E{Key: "$unset", Value: unset})
		}
		if _, err := s.monthly.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, update, options.Update().SetUpsert(true)); err != nil {
			return fmt.Errorf("usage: rewrite monthly %s: %w", id, err)
		}
	}
	// Every day from `from` on agrees with the log now.
	start, _ := time.Parse(time.DateOnly, from)
	before := Day(start.AddDate(0, 0, -1))
	if _, err := s.monthly.UpdateOne(ctx, bson.D{{Key: "_id", Value: sinceID}, {Key: "day", Value: bson.D{{Key: "$gt", Value: before}}}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "day", Value: before}}}}); err != nil {
		return fmt.Errorf("usage: move the monthly documents' first day: %w", err)
	}
	s.since.Store(nil) // read anew
	return nil
}

// sameRows reports whether two sums agree on every provider and model.
func sameRows(a, b accumulator) bool {
	nonzero := func(acc accumulator) map[string]ProviderUsage {
		out := map[string]ProviderUsage{}
		for k, r := range acc {
			if r.RequestCount != 0 || r.TotalTokens != 0 || r.Cost != 0 {
				out[k] = *r
			}
		}
		return out
	}
	x, y := nonzero(a), nonzero(b)
	if len(x) != len(y) {
		return false
	}
	for k, r := range x {
		o, ok := y[k]
		if !ok || o.RequestCount != r.RequestCount || o.TotalTokens != r.TotalTokens || costUnits(o.Cost) != costUnits(r.Cost) {
			return false
		}
	}
	return true
}

// legacyShape reports whether a rollup document holds flat cells of an earlier version.
func legacyShape(doc bson.Raw) bool {
	cells, ok := doc.Lookup("m").DocumentOK()
	if !ok {
		return false
	}
	elems, _ := cells.Elements()
	for _, e := range elems {
		if _, _, legacy := splitCounter(e.Key()); legacy != nil {
			return true
		}
	}
	return false
}

// cellsDoc is the `m` of a rollup document holding d's cells (empty for nil).
func cellsDoc(d *dailyDelta) bson.D {
	m := bson.D{}
	if d == nil {
		return m
	}
	for _, k := range slices.Sorted(maps.Keys(d.models)) {
		c := d.models[k]
		m = append(m,
			bson.E{Key: k + "|" + fieldRequests, Value: c.Requests},
			bson.E{Key: k + "|" + fieldTokens, Value: c.TotalTokens},
			bson.E{Key: k + "|" + fieldCost, Value: costUnits(c.Cost)})
	}
	return m
}
