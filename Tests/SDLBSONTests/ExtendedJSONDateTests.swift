import Testing

@testable import SDLBSON

/// Relaxed `$date` strings (ISO-8601) must name a real instant.
@Suite struct ExtendedJSONDateTests {
    func milliseconds(_ iso: String) throws -> Int64? {
        try BSONDocument(extendedJSON: "{\"d\": {\"$date\": \"\(iso)\"}}")["d"]?.dateTimeValue?.millisecondsSinceEpoch
    }

    /// The BSONError an impossible date is refused with.
    func refusal(_ iso: String) -> BSONError? {
        do {
            _ = try BSONDocument(extendedJSON: "{\"d\": {\"$date\": \"\(iso)\"}}")
            return nil
        } catch {
            return error
        }
    }

    @Test func realDatesParse() throws {
        #expect(try milliseconds("2012-02-29T00:00:00Z") == 1_330_473_600_000, "2012 is a leap year")
        #expect(try milliseconds("2000-02-29T00:00:00Z") == 951_782_400_000, "2000 is a leap year (divisible by 400)")
        #expect(try milliseconds("2012-12-31T23:59:59.999Z") == 1_356_998_399_999)
        #expect(try milliseconds("1970-01-01T00:00:00+01:00") == -3_600_000)
        #expect(try milliseconds("2012-04-30T12:00:00Z") == 1_335_787_200_000)
    }

    @Test(arguments: [
        ("2012-02-31T00:00:00Z", "has day 31, but month 2 of 2012 has 29 days"),
        ("2013-02-29T00:00:00Z", "has day 29, but month 2 of 2013 has 28 days"),
        ("1900-02-29T00:00:00Z", "has day 29, but month 2 of 1900 has 28 days"),
        ("2012-04-31T00:00:00Z", "has day 31, but month 4 of 2012 has 30 days"),
        ("2012-01-32T00:00:00Z", "has day 32, but month 1 of 2012 has 31 days"),
        ("2012-01-00T00:00:00Z", "has day 0, but month 1 of 2012 has 31 days"),
        ("2012-13-01T00:00:00Z", "has no month 13"),
        ("2012-01-01T24:00:00Z", "has hour 24"),
        ("2012-01-01T23:60:00Z", "has minute 60"),
        ("2012-01-01T23:59:60Z", "has second 60 (leap seconds have no BSON datetime)"),
        ("2016-12-31T23:59:60Z", "has second 60 (leap seconds have no BSON datetime)"),
        ("2012-01-01T00:00:00+24:00", "has an out-of-range UTC offset"),
    ])
    func impossibleDatesAreRefused(iso: String, detail: String) {
        let error = refusal(iso)
        #expect(error?.code == .invalidExtendedJSON)
        #expect(error?.detail == "d: $date \"\(iso)\" \(detail)")
    }
}
