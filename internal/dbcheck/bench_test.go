package dbcheck_test

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/bson"

	"github.com/acme/app/internal/dbcheck"
	"github.com/acme/app/internal/store/storetest"
)

func benchService(b *testing.B) *dbcheck.Service {
	s, err := dbcheck.New(dbcheck.Options{AllowedHosts: []string{"127.0.0.1"}})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func benchTest(b *testing.B, s *dbcheck.Service, uri string) time.Duration {
	t0 := time.Now()
	res, err := s.Test(context.Background(), dbcheck.TestInput{ConnectionString: uri, Database: "admin"})
	if err != nil || !res.Success {
		b.Fatalf("Test: %+v, %v", res, err)
	}
	return time.Since(t0)
}

// BenchmarkTest_ColdVsWarm measures, in one run, a test against a server the service has no
// client for (a new client: handshake, server selection) and a repeated test that reuses the
// cached client. Reported: cold-ms, warm-ms and their ratio (the issue asks for >= 5x).
// "loopback" is the embedded store in this process; "link-1ms" puts a proxy that delays every
// write by 0.5 ms each way in front of it, as a nearby network server would be.
func BenchmarkTest_ColdVsWarm(b *testing.B) {
	uri := storetest.Store(b).URI()
	b.Run("loopback", func(b *testing.B) { coldVsWarm(b, uri) })
	b.Run("link-1ms", func(b *testing.B) { coldVsWarm(b, delayProxy(b, uri, 500*time.Microsecond)) })
}

func coldVsWarm(b *testing.B, uri string) {
	warm := benchService(b)
	defer warm.Close(context.Background())
	benchTest(b, warm, uri)
	var cold, hot []time.Duration
	b.ResetTimer()
	for range b.N {
		s := benchService(b)
		cold = append(cold, benchTest(b, s, uri))
		b.StopTimer()
		_ = s.Close(context.Background())
		b.StartTimer()
		hot = append(hot, benchTest(b, warm, uri))
	}
	c, w := median(cold), median(hot)
	b.ReportMetric(ms(c), "cold-ms")
	b.ReportMetric(ms(w), "warm-ms")
	b.ReportMetric(float64(c)/float64(w), "cold/warm")
}

// delayProxy forwards 127.0.0.1:random to the server of uri, delaying every chunk by d in each
// direction, and returns the URI to use.
func delayProxy(b *testing.B, uri string, d time.Duration) string {
	target := strings.TrimSuffix(strings.TrimPrefix(uri, "mongodb://"), "/")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	pipe := func(dst, src net.Conn) {
		defer dst.Close()
		buf := make([]byte, 64<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				time.Sleep(d)
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			go pipe(u, c)
			go pipe(c, u)
		}
	}()
	return "mongodb://" + ln.Addr().String() + "/"
}

// BenchmarkTest_Warm is a repeated test against the same server (the cached client).
func BenchmarkTest_Warm(b *testing.B) {
	uri := storetest.Store(b).URI()
	s := benchService(b)
	defer s.Close(context.Background())
	benchTest(b, s, uri)
	b.ResetTimer()
	for range b.N {
		benchTest(b, s, uri)
	}
}

// BenchmarkQuery_100x1KB is a query returning 100 documents of about 1 KB from the embedded
// store; reported: p50-ms and p95-ms per query.
func BenchmarkQuery_100x1KB(b *testing.B) {
	db := storetest.DB(b)
	docs := make([]any, 100)
	for i := range docs {
		docs[i] = bson.M{"n": i, "name": "item", "at": time.Now(), "tags": bson.A{"a", "b", "c"}, "body": strings.Repeat("x", 900)}
	}
	if _, err := db.Collection("items").InsertMany(context.Background(), docs); err != nil {
		b.Fatal(err)
	}
	s := benchService(b)
	defer s.Close(context.Background())
	in := dbcheck.QueryInput{ConnectionString: storetest.Store(b).URI(), Database: db.Name(), Collection: "items"}
	var took []time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		res, err := s.Query(context.Background(), in)
		if err != nil || res.Count != 100 {
			b.Fatalf("Query: %v (count %v)", err, res)
		}
		took = append(took, time.Since(t0))
	}
	b.ReportMetric(ms(median(took)), "p50-ms")
	b.ReportMetric(ms(percentile(took, 0.95)), "p95-ms")
}

func median(d []time.Duration) time.Duration { return percentile(d, 0.5) }

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
