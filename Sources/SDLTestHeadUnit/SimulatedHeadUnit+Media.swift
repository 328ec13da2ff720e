import NIOCore
import SDLRPC

/// A media service an app starts on its session (protocol spec: service types 0x0A and 0x0B).
public enum MediaService: Hashable, Sendable, CustomStringConvertible {
    /// PCM audio (service type 0x0A, 10).
    case audio
    /// H.264 video (service type 0x0B, 11).
    case video

    /// The protocol's service type number, as SDL Core writes it in its reasons.
    public var serviceType: Int {
        switch self {
        case .audio: 10
        case .video: 11
        }
    }

    /// `audio` or `video`.
    public var description: String {
        switch self {
        case .audio: "audio"
        case .video: "video"
        }
    }
}

/// Whether the head unit lets an app start a media service: the answer the session layer gives
/// its StartService (ACK, or NAK with the reason).
public enum MediaStartDecision: Hashable, Sendable {
    /// Start it (StartServiceACK).
    case accept
    /// Refuse it (StartServiceNAK); `reason` is SDL Core's, nil where Core gives none.
    case refuse(reason: String?)
}

extension SimulatedHeadUnit {
    /// Whether an app may start a media service now, as SDL Core decides a StartService for audio
    /// or video (its `OnServiceStartedCallback` and `HMIStateAllowsStreaming`):
    ///
    /// - an app that is not registered: refused without a reason (Core does not answer at all; the
    ///   session layer must answer every StartService, so it refuses);
    /// - an app that is neither NAVIGATION nor PROJECTION (its app HMI types, after the policy's):
    ///   refused, "Service type: 10 disallowed with current HMI type" (11 for video): on Core only
    ///   those apps stream, audio included;
    /// - an app not in FULL or LIMITED, or whose video state is not STREAMABLE (video) or audio
    ///   state NOT_AUDIBLE (audio): refused, "Service type: 11 disallowed with current HMI level";
    /// - otherwise accepted.
    ///
    /// The session layer asks before it answers the StartService; it reports the service's data
    /// with ``mediaServiceStarted(_:by:now:)`` and ``mediaServiceEnded(_:by:now:)``.
    public func mediaStartDecision(for app: AppHandle, service: MediaService) -> MediaStartDecision {
        guard let registration = self.apps[app]?.registration else { return .refuse(reason: nil) }
        guard registration.isNavigation || registration.isProjection else {
            return .refuse(reason: "Service type: \(service.serviceType) disallowed with current HMI type")
        }
        let level = registration.hmiLevel
        let foreground = level == .full || level == .limited
        let streamable: Bool
        switch service {
        case .video: streamable = registration.videoState == .streamable
        case .audio: streamable = self.hmiStatus(for: registration).audioStreamingState != .notAudible
        }
        guard foreground && streamable else {
            return .refuse(reason: "Service type: \(service.serviceType) disallowed with current HMI level")
        }
        return .accept
    }

    /// An app's media service carries data (SDL Core's `OnAppStreaming` started, which it calls
    /// when the service's data starts to flow). While a NAVIGATION app streams, SDL Core lays its
    /// navigation-streaming state over every other app: an audible app becomes NOT_AUDIBLE (Core's
    /// stock HMI does not support attenuation) and gets OnHMIStatus; it is audible again after
    /// ``mediaServiceEnded(_:by:now:)``. A PROJECTION app's streaming changes no other app.
    public mutating func mediaServiceStarted(_ service: MediaService, by app: AppHandle, now: NIODeadline) -> [HeadUnitOutput] {
        self.step(app, "\(service) data started") { headUnit in
            guard headUnit.apps[app]?.registration != nil else { return "ignored: not registered" }
            return headUnit.changeStreaming(of: app) { $0.insert(service) }
        }
    }

    /// An app's media service ended or its data stopped (SDL Core's `OnAppStreaming` stopped): what
    /// ``mediaServiceStarted(_:by:now:)`` changed is undone when no navigation app streams any more.
    public mutating func mediaServiceEnded(_ service: MediaService, by app: AppHandle, now: NIODeadline) -> [HeadUnitOutput] {
        self.step(app, "\(service) data ended") { headUnit in
            guard headUnit.apps[app]?.registration != nil else { return "ignored: not registered" }
            return headUnit.changeStreaming(of: app) { $0.remove(service) }
        }
    }

    /// The media services whose data flows for an app (``mediaServiceStarted(_:by:now:)``).
    public func streamingServices(of app: AppHandle) -> Set<MediaService> {
        self.apps[app]?.registration?.streaming ?? []
    }

    private mutating func changeStreaming(of app: AppHandle, _ change: (inout Set<MediaService>) -> Void) -> String {
        let before = Dictionary(uniqueKeysWithValues: self.registeredApps.compactMap { handle in
            self.apps[handle]?.registration.map { (handle, self.hmiStatus(for: $0)) }
        })
        guard var registration = self.apps[app]?.registration else { return "not registered" }
        change(&registration.streaming)
        self.apps[app]?.registration = registration
        var changed: [AppHandle] = []
        for handle in self.registeredApps {
            guard let other = self.apps[handle]?.registration else { continue }
            let status = self.hmiStatus(for: other)
            if status != before[handle] {
                self.notify(status, to: handle)
                changed.append(handle)
            }
        }
        let streaming = registration.streaming.map(\.description).sorted().joined(separator: ", ")
        return "streaming: [\(streaming)]" + (changed.isEmpty ? "" : "; OnHMIStatus to \(changed.map(\.description).joined(separator: ", "))")
    }
}
