import NIOCore
import SDLRPC

/// A question the head unit put to the simulated driver that is not answered yet
/// (``SimulatedHeadUnit/DriverConsent/ask``): a script answers it with `answer`
/// (``HeadUnitCommand``), or it times out after ``SimulatedHeadUnit/Configuration/driverAnswerTimeout``.
public struct DriverQuestion: Hashable, Sendable, CustomStringConvertible {
    /// The question's number, counting from 1 in the head unit's life; the transcript names it.
    public var number: Int
    /// The app whose request asked.
    public var app: AppHandle
    /// What it is about: module ids (remote control) or a service id (app-service activation).
    /// `answer <subject> allow|deny` answers about one of them.
    public var subjects: [String]
    /// The question, for a human, e.g. `may Climate take CLIMATE climate-0?`.
    public var topic: String
    /// When it times out.
    public var deadline: NIODeadline

    /// `question 3 (app2): may Climate take CLIMATE climate-0?`.
    public var description: String { "question \(self.number) (\(self.app)): \(self.topic)" }
}

/// A request that waits for the driver or for the vehicle.
struct WaitingRequest: Sendable {
    /// What the request will do once the wait is over.
    enum Kind: Sendable {
        /// SetInteriorVehicleData or ButtonPress that needs the driver's consent to take a module
        /// another app holds (ask-driver mode).
        case acquisition(ModuleKey)
        /// GetInteriorVehicleDataConsent: the answers computed so far, nil where the driver decides.
        case consent(keys: [ModuleKey], allowed: [Bool?])
        /// PerformAppServiceInteraction that needs the driver to activate a service.
        case serviceActivation(serviceID: String)
        /// SetInteriorVehicleData or ButtonPress the vehicle is carrying out (the module is busy).
        case execution(ModuleKey)
    }

    /// What it waits for.
    enum Stage: Sendable {
        case driver(DriverQuestion)
        case vehicle
    }

    var number: Int
    var app: AppHandle
    var request: AnyRPCMessage
    var kind: Kind
    var stage: Stage
    var deadline: NIODeadline
    /// The driver's answers so far, per subject.
    var answers: [String: Bool] = [:]
}

extension SimulatedHeadUnit {
    /// Puts a question to the driver about `subjects`. When the driver answers at once
    /// (``DriverConsent`` other than `ask`) the request goes on now; otherwise it waits.
    mutating func askDriver(
        about subjects: [String], topic: String, for request: AnyRPCMessage, from app: AppHandle,
        waiting kind: WaitingRequest.Kind, now: NIODeadline
    ) -> String {
        let number = self.nextWaitingNumber
        self.nextWaitingNumber += 1
        let question = DriverQuestion(
            number: number, app: app, subjects: subjects, topic: topic, deadline: now + self.configuration.driverAnswerTimeout)
        var entry = WaitingRequest(
            number: number, app: app, request: request, kind: kind, stage: .driver(question), deadline: question.deadline)
        for subject in subjects {
            if let answer = self.driverConsent.answer(about: subject) {
                entry.answers[subject] = answer
            }
        }
        if entry.answers.count == subjects.count {
            return "asked the driver \"\(topic)\": " + self.resolve(entry, now: now)
        }
        self.waiting.append(entry)
        return "asked the driver \"\(topic)\" (question \(number)); waiting"
    }

    /// Queues a request that waits (for the vehicle).
    mutating func wait(_ entry: WaitingRequest) {
        var entry = entry
        entry.number = self.nextWaitingNumber
        self.nextWaitingNumber += 1
        self.waiting.append(entry)
    }

    /// The driver answered about a subject (`nil`: every subject of the oldest question): the
    /// oldest question about it takes the answer, and its request goes on once every subject of
    /// it is answered. Returns the transcript outcome.
    mutating func driverAnswered(_ subject: String?, allow: Bool, now: NIODeadline) -> String {
        guard
            let position = self.waiting.firstIndex(where: {
                guard case .driver(let question) = $0.stage else { return false }
                return subject.map { question.subjects.contains($0) } ?? true
            }), case .driver(let question) = self.waiting[position].stage
        else {
            return "no question about \(subject ?? "anything") is waiting"
        }
        for item in question.subjects where subject == nil || item == subject {
            self.waiting[position].answers[item] = allow
        }
        let entry = self.waiting[position]
        guard entry.answers.count == question.subjects.count else {
            return "question \(question.number): \(subject ?? "") \(allow ? "allowed" : "denied"); waiting for the rest"
        }
        self.waiting.remove(at: position)
        return "question \(question.number) answered: " + self.resolve(entry, now: now)
    }

    /// A wait is over: the driver answered every subject, or the vehicle is done.
    private mutating func resolve(_ entry: WaitingRequest, now: NIODeadline) -> String {
        guard self.isRegistered(entry.app) else { return "dropped: \(entry.app) is gone" }
        let request = entry.request
        switch entry.kind {
        case .acquisition(let key):
            let allowed = entry.answers[key.id] ?? false
            if let policyAppID = self.apps[entry.app]?.registration?.policyAppID {
                self.savedConsents[policyAppID, default: [:]][key] = allowed
            }
            guard allowed else { return self.driverDisallowed(request, key, app: entry.app) }
            return self.executeRemoteControl(request, app: entry.app, now: now)
        case .consent(let keys, let allowed):
            let answers = zip(keys, allowed).map { $0.1 ?? entry.answers[$0.0.id] ?? false }
            return self.answerConsent(request, keys: keys, allowed: answers, app: entry.app, save: true)
        case .serviceActivation(let serviceID):
            guard entry.answers[serviceID] == true else {
                return self.fail(request, .userDisallowed, "Request to activate service was denied by driver", app: entry.app)
            }
            guard let index = self.services.firstIndex(where: { $0.serviceID == serviceID }),
                let interaction = request.message as? SDLPerformAppServiceInteractionRequest
            else {
                return self.fail(request, .invalidId, "The requested service ID does not exist", app: entry.app)
            }
            self.activateService(at: index)
            return self.sendInteraction(request, interaction, from: entry.app, now: now)
        case .execution:
            return self.completeRemoteControl(request, app: entry.app)
        }
    }

    /// Deadlines that passed: the vehicle finishes, unanswered questions time out (the request:
    /// GENERIC_ERROR without `info`, as SDL Core answers a request whose HMI request timed out).
    mutating func expireWaiting(now: NIODeadline) -> String {
        var outcomes: [String] = []
        while let position = self.waiting.firstIndex(where: { $0.deadline <= now }) {
            let entry = self.waiting.remove(at: position)
            switch entry.stage {
            case .vehicle:
                outcomes.append("the vehicle is done with #\(entry.request.correlationID) of \(entry.app): " + self.resolve(entry, now: now))
            case .driver(let question):
                guard self.isRegistered(entry.app) else { continue }
                outcomes.append(
                    "question \(question.number) timed out: "
                        + self.fail(entry.request, .genericError, reason: "the driver did not answer", app: entry.app))
            }
        }
        return outcomes.joined(separator: "; ")
    }

    /// Forgets what an app that is leaving waits for; the modules the vehicle was working on for
    /// it are free again.
    mutating func dropWaiting(of app: AppHandle) {
        for entry in self.waiting where entry.app == app {
            if case .execution(let key) = entry.kind {
                self.busyModules.remove(key)
            }
        }
        self.waiting.removeAll { $0.app == app }
    }
}
