import NIOCore
import SDLBSON
import SDLProtocol

/// Reads a control payload field by field and forgives what it can: peers send `mtu` as int32,
/// `hashId` as a string, no payload at all, or bytes that are not BSON (ARCHITECTURE.md,
/// D-lenient-payloads). The typed payloads of SDLProtocol refuse such input; the engine must still
/// act on the fields that are usable. Every problem is collected for an anomaly event.
struct LenientPayload {
    private(set) var document: BSONDocument?
    private(set) var problems: [String] = []

    /// Reads `payload` as BSON; an empty payload is "no fields", anything undecodable is a problem.
    init(_ payload: ByteBuffer) {
        guard payload.readableBytes > 0 else { return }
        do {
            self.document = try BSONDocument(validating: payload)
        } catch {
            self.problems.append("not a BSON document: \(error)")
        }
    }

    var isBSON: Bool { self.document != nil }

    mutating func string(_ key: String) -> String? {
        guard let element = self.document?[key] else { return nil }
        if let value = element.stringValue { return value }
        self.problems.append("\(key) is \(element.type), not a string")
        return nil
    }

    /// An integer of either width (or an integral double).
    mutating func integer(_ key: String) -> Int64? {
        guard let element = self.document?[key] else { return nil }
        if let value = element.integerValue { return value }
        if let double = element.doubleValue, let value = Int64(exactly: double) { return value }
        self.problems.append("\(key) is \(element.type), not an integer")
        return nil
    }

    mutating func strings(_ key: String) -> [String]? {
        guard let element = self.document?[key] else { return nil }
        guard let array = element.arrayValue else {
            self.problems.append("\(key) is \(element.type), not an array")
            return nil
        }
        var values: [String] = []
        for item in array {
            if let value = item.stringValue {
                values.append(value)
            } else {
                self.problems.append("\(key) holds a \(item.type), not a string")
            }
        }
        return values
    }

    mutating func integers(_ key: String) -> [Int64]? {
        guard let element = self.document?[key] else { return nil }
        guard let array = element.arrayValue else {
            self.problems.append("\(key) is \(element.type), not an array")
            return nil
        }
        var values: [Int64] = []
        for item in array {
            if let value = item.integerValue {
                values.append(value)
            } else {
                self.problems.append("\(key) holds a \(item.type), not an integer")
            }
        }
        return values
    }

    /// A NAK's content: `rejectedParams` and `reason`, whatever else the payload holds.
    mutating func nakContent() -> NAKContent {
        NAKContent(rejectedParams: self.strings("rejectedParams") ?? [], reason: self.string("reason"))
    }
}

extension TransportSlot {
    /// Reads a service-transport list: an empty list counts as absent and entries other than 1 and
    /// 2 are dropped (ARCHITECTURE.md, D-lenient-payloads), each reported in `problems`.
    static func list(_ values: [Int64]?, key: String, problems: inout [String]) -> [TransportSlot]? {
        guard let values else { return nil }
        guard !values.isEmpty else {
            problems.append("\(key) is empty: treated as absent (primary only)")
            return nil
        }
        var slots: [TransportSlot] = []
        for value in values {
            if let slot = Int32(exactly: value).flatMap(TransportSlot.init(rawValue:)) {
                if !slots.contains(slot) { slots.append(slot) }
            } else {
                problems.append("\(key) holds \(value), neither 1 (primary) nor 2 (secondary): ignored")
            }
        }
        return slots.isEmpty ? nil : slots
    }
}
