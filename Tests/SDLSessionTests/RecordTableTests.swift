import SDLTestSupport
import Testing

@testable import SDLSession

/// The engine's record table against a Dictionary model: random inserts, replacements, removals
/// and in-place changes, with keys that collide in the index on purpose.
@Suite("Record table")
struct RecordTableTests {
    @Test("Matches a Dictionary through 20,000 random operations", arguments: [UInt64(1), 2, 3])
    func matchesDictionary(seed: UInt64) {
        var random = SDLTestSupport.SplitMix64(seed: seed)
        var table = RecordTable<TransportID, [Int]>()
        var model: [TransportID: [Int]] = [:]
        // Few distinct keys, spread so that several share a home position.
        let keys = (0..<40).map { TransportID(UInt64($0) << UInt64(random.next() % 3 == 0 ? 60 : 0) | UInt64($0)) }
        for step in 0..<20_000 {
            let key = keys[Int(random.next() % UInt64(keys.count))]
            switch random.next() % 4 {
            case 0:
                table[key] = [step]
                model[key] = [step]
            case 1:
                #expect(table.removeValue(forKey: key) == model.removeValue(forKey: key))
            case 2:
                if table.contains(key) {
                    table[existing: key].append(step)
                    model[key]!.append(step)
                }
            default:
                #expect(table[key] == model[key])
            }
            #expect(table.count == model.count)
        }
        #expect(Dictionary(uniqueKeysWithValues: table.map { ($0.key, $0.value) }) == model)
        #expect(Set(table.keys) == Set(model.keys))
    }

    @Test("A copy is independent of the original (copy on write)")
    func copyOnWrite() {
        var table = RecordTable<SessionHandle, [Int]>()
        table[SessionHandle(rawValue: 1)] = [1]
        table[SessionHandle(rawValue: 2)] = [2]
        var copy = table
        copy[existing: SessionHandle(rawValue: 1)].append(10)
        copy[SessionHandle(rawValue: 2)] = nil
        copy[SessionHandle(rawValue: 3)] = [3]
        #expect(table[SessionHandle(rawValue: 1)] == [1])
        #expect(table[SessionHandle(rawValue: 2)] == [2])
        #expect(table[SessionHandle(rawValue: 3)] == nil)
        #expect(copy[SessionHandle(rawValue: 1)] == [1, 10])
        #expect(copy.count == 2)
    }
}
