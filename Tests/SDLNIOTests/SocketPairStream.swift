#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import SDLNIO

/// The byte-stream example: an ``SDLByteStream`` over one end of a Unix socket pair, read and
/// written with blocking calls as an iAP session's streams, a USB accessory's file or a serial
/// port are. Each direction has a thread of its own that makes one blocking call at a time, as
/// the runtime asks: a read only when the runtime wants bytes (so a runtime that stops reading
/// stops the peer through the kernel's buffers), a write returning once the kernel took it.
final class SocketPairStream: SDLByteStream {
    private let descriptor: OwnedDescriptor
    private let reads = BlockingLane()
    private let writes = BlockingLane()
    private let closed = NIOLockedValueBox(false)

    private init(descriptor: Int32) {
        self.descriptor = OwnedDescriptor(descriptor)
    }

    deinit {
        // A read still blocked returns; the descriptor is closed once the last call that holds it
        // has returned.
        _ = shutdown(self.descriptor.value, Int32(SHUT_RDWR))
        self.reads.stop()
        self.writes.stop()
    }

    /// Two streams joined to each other.
    static func pair() throws -> (SocketPairStream, SocketPairStream) {
        var descriptors: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &descriptors) == 0 else {
            throw SocketPairError(call: "socketpair", errno: errno)
        }
        return (SocketPairStream(descriptor: descriptors[0]), SocketPairStream(descriptor: descriptors[1]))
    }

    func read() async throws -> ByteBuffer? {
        let owned = self.descriptor
        return try await self.reads.run { () throws -> ByteBuffer? in
            let descriptor = owned.value
            var buffer = ByteBufferAllocator().buffer(capacity: 65_536)
            let count = try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 65_536) { pointer in
                while true {
                    let count = Glibc.read(descriptor, pointer.baseAddress, pointer.count)
                    if count >= 0 { return count }
                    if errno != EINTR { throw SocketPairError(call: "read", errno: errno) }
                }
            }
            return count == 0 ? nil : buffer
        }
    }

    func write(_ bytes: ByteBuffer) async throws {
        guard !self.closed.withLockedValue({ $0 }) else { throw SocketPairError(call: "write", errno: EBADF) }
        let owned = self.descriptor
        try await self.writes.run {
            let descriptor = owned.value
            try bytes.withUnsafeReadableBytes { pointer in
                var offset = 0
                while offset < pointer.count {
                    let count = Glibc.send(descriptor, pointer.baseAddress! + offset, pointer.count - offset, Int32(MSG_NOSIGNAL))
                    if count < 0 {
                        if errno == EINTR { continue }
                        throw SocketPairError(call: "send", errno: errno)
                    }
                    offset += count
                }
            }
        }
    }

    /// Shuts both directions down: a read waiting returns nil (here and at the peer), a write
    /// waiting fails. The descriptor itself is closed once no call holds it, so that none can
    /// reach a descriptor number the process has given to something else meanwhile.
    func close() async {
        self.closed.withLockedValue { $0 = true }
        _ = shutdown(self.descriptor.value, Int32(SHUT_RDWR))
    }
}

/// A descriptor closed when the last reference goes.
final class OwnedDescriptor: Sendable {
    let value: Int32
    init(_ value: Int32) { self.value = value }
    deinit { _ = Glibc.close(self.value) }
}

struct SocketPairError: Error, CustomStringConvertible {
    let call: String
    let errno: Int32
    var description: String { "\(self.call): \(String(cString: strerror(self.errno)))" }
}

/// One thread that runs blocking calls one after another.
final class BlockingLane: Sendable {
    private let jobs = NIOLockedValueBox<(queue: [@Sendable () -> Void], stopped: Bool)>(([], false))
    private let ready = DispatchSemaphore(value: 0)

    init() {
        let jobs = self.jobs
        let ready = self.ready
        let thread = Thread {
            while true {
                ready.wait()
                let job: (@Sendable () -> Void)? = jobs.withLockedValue { state in
                    state.queue.isEmpty ? nil : state.queue.removeFirst()
                }
                guard let job else { return }  // stopped
                job()
            }
        }
        thread.start()
    }

    func run<Value: Sendable>(_ body: @escaping @Sendable () throws -> Value) async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            let accepted = self.jobs.withLockedValue { state -> Bool in
                guard !state.stopped else { return false }
                state.queue.append { continuation.resume(with: Swift.Result { try body() }) }
                return true
            }
            if accepted {
                self.ready.signal()
            } else {
                continuation.resume(throwing: SocketPairError(call: "lane", errno: EBADF))
            }
        }
    }

    /// Ends the thread once the jobs queued before have run.
    func stop() {
        self.jobs.withLockedValue { $0.stopped = true }
        self.ready.signal()
    }
}
