import NIOCore
import SDLProtocol

/// The secondary transport of one session, app role (protocol spec 5.4.1 §4.6; after sdl_ios's
/// `SDLSecondaryTransportManager`, with its retry loop capped: ARCHITECTURE.md, D-secondary).
///
/// ```
/// idle --wanted (lazy) or address known (eager)--> connecting --open--> registering --ACK--> registered
/// registering --NAK--> backoff (or rejected after maxRejections)   --timeout / close--> backoff
/// registered --closed--> backoff --timer--> idle        any --TEU with "" address--> unavailable
/// ```
struct SecondaryMachine: Sendable {
    enum State: Hashable, Sendable {
        /// The head unit offers no secondary transport this engine can use (none, or not TCP).
        case disabled
        /// Offered; connects when wanted and an address and port are known.
        case idle
        case connecting(ConnectRequestID)
        case registering(TransportID, deadline: NIODeadline)
        case registered(TransportID)
        case backoff(attempt: Int, until: NIODeadline)
        /// Refused for good, until a new TransportEventUpdate.
        case rejected(reason: String?)
        /// TCP unavailable (an empty address), until a new TransportEventUpdate.
        case unavailable
    }

    var state: State
    var address: String?
    var port: Int32?
    /// Losses and timeouts in a row, for the backoff delay.
    var failures = 0
    /// NAKs in a row.
    var rejections = 0
    /// A TransportEventUpdate waiting out the debounce interval.
    var pendingUpdate: (address: String?, port: Int32?, deadline: NIODeadline)?

    init(offered: Bool) {
        self.state = offered ? .idle : .disabled
    }

    var isRegistered: Bool {
        if case .registered = self.state { return true }
        return false
    }

    /// Whether a connection may come up without a new TransportEventUpdate.
    var canComeUp: Bool {
        switch self.state {
        case .connecting, .registering, .backoff: return true
        case .idle: return self.hasUsableAddress
        case .registered: return true
        case .disabled, .rejected, .unavailable: return false
        }
    }

    var hasUsableAddress: Bool {
        guard let address = self.address, !address.isEmpty, self.port != nil else { return false }
        return true
    }

    /// The transport the machine is using, if any.
    var transport: TransportID? {
        switch self.state {
        case .registering(let transport, _), .registered(let transport): return transport
        default: return nil
        }
    }

    /// The state as the layer above sees it.
    var publicState: SecondaryTransportState {
        switch self.state {
        case .disabled: return .disabled
        case .idle: return .configured(address: self.address, port: self.port)
        case .connecting: return .connecting
        case .registering(let transport, _): return .registering(transport)
        case .registered(let transport): return .registered(transport)
        case .backoff(let attempt, _): return .backoff(attempt: attempt)
        case .rejected(let reason): return .rejected(reason: reason)
        case .unavailable: return .unavailable
        }
    }

    var deadline: NIODeadline? {
        var earliest = self.pendingUpdate?.deadline
        switch self.state {
        case .registering(_, let deadline), .backoff(_, let deadline):
            earliest = earliest.map { min($0, deadline) } ?? deadline
        default:
            break
        }
        return earliest
    }
}
