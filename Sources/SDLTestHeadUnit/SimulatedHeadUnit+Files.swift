import NIOCore
import SDLRPC

extension SimulatedHeadUnit {
    /// Core's limit on file requests in HMI NONE: the request is counted, and REJECTED beyond
    /// ``Configuration/fileRequestsInNone``; nil lets it through.
    mutating func limitInNone(_ request: AnyRPCMessage, app: AppHandle) -> String? {
        guard let registration = self.apps[app]?.registration, registration.hmiLevel == .none_ else { return nil }
        let sent = registration.content.requestsInNone[request.functionID, default: 0]
        guard sent < self.configuration.fileRequestsInNone else {
            return self.failFile(
                request, .rejected, "too many \(request.functionName) requests in HMI NONE (\(sent))", app: app)
        }
        self.updateContent(of: app) { $0.requestsInNone[request.functionID] = sent + 1 }
        return nil
    }

    /// PutFile, ListFiles or DeleteFile.
    mutating func answerFile(_ request: AnyRPCMessage, app: AppHandle) -> String {
        switch request.message {
        case let put as SDLPutFileRequest: self.putFile(request, put, app: app)
        case let delete as SDLDeleteFileRequest: self.deleteFile(request, delete, app: app)
        default: self.listFiles(request, app: app)
        }
    }

    /// PutFile, as SDL Core 8.2 answers it: the bytes go to the app's store (sizes only are kept),
    /// in one request or several (`offset` continues the file, `length` is its whole size), within
    /// ``Configuration/appStorageQuota`` and ``Configuration/maxFilesPerApp``; `spaceAvailable`
    /// says what remains. INVALID_DATA for no bytes, a name with a `/`, an offset that does not
    /// continue the file or bytes beyond `length`; CORRUPTED_DATA when `crc` (CRC-32) does not match;
    /// OUT_OF_MEMORY when the quota or the file count would be exceeded. A `systemFile` goes to the
    /// HMI, not to the app's store.
    mutating func putFile(_ request: AnyRPCMessage, _ put: SDLPutFileRequest, app: AppHandle) -> String {
        guard let content = self.apps[app]?.registration?.content else { return "not registered" }
        let name = put.syncFileName
        let bytes = request.bulkData.readableBytes
        if let problem = Self.fileNameProblem(name) {
            return self.failFile(request, .invalidData, problem, app: app)
        }
        guard bytes > 0 else {
            return self.failFile(request, .invalidData, "Binary data empty", app: app)
        }
        let offset = Int(put.offset ?? 0)
        let existing = content.files[name]
        if offset > 0 && offset != existing?.size {
            return self.failFile(
                request, .invalidData,
                "offset \(offset) does not continue \(name) (\(existing?.size ?? 0) bytes stored)", app: app)
        }
        let length = put.length.map(Int.init) ?? (offset > 0 ? existing?.length ?? offset + bytes : bytes)
        if offset + bytes > length {
            return self.failFile(
                request, .invalidData, "\(offset + bytes) bytes exceed the file's length \(length)", app: app)
        }
        if let crc = put.crc, Int64(Self.crc32(request.bulkData)) != crc {
            return self.failFile(request, .corruptedData, "CRC check on file failed", app: app)
        }
        if put.systemFile == true {
            // Core writes a system file to its own folder for the HMI (OnPutFile): it is not the
            // app's, is not listed and does not count against its quota.
            self.respond(
                to: request,
                with: SDLPutFileResponse(success: true, resultCode: .success, spaceAvailable: self.spaceAvailable(for: app)),
                app: app)
            return "passed \(name) (\(bytes) bytes) to the HMI as a system file"
        }
        // A file written from offset 0 replaces the one of that name: its bytes are freed first.
        let freed = offset == 0 ? existing?.size ?? 0 : 0
        let used = content.storedBytes - freed
        if used + bytes > self.configuration.appStorageQuota {
            return self.failFile(request, .outOfMemory, "Not enough space to store \(name)", app: app)
        }
        if existing == nil && content.files.count >= self.configuration.maxFilesPerApp {
            return self.failFile(
                request, .outOfMemory, "the app already stores \(content.files.count) files", app: app)
        }
        let file = StoredFile(
            fileType: put.fileType, isPersistent: put.persistentFile ?? false, size: offset + bytes, length: length)
        self.updateContent(of: app) {
            $0.files[name] = file
            $0.storedBytes = used + bytes
        }
        self.respond(
            to: request,
            with: SDLPutFileResponse(success: true, resultCode: .success, spaceAvailable: self.spaceAvailable(for: app)),
            app: app)
        let progress = file.size == file.length ? "" : " (\(file.size) of \(file.length))"
        return "stored \(name), \(bytes) bytes at offset \(offset)\(progress)"
    }

    /// ListFiles: the app's file names in name order (Core's map order), at most 1,000 (the
    /// spec's `maxsize`, Core's `ListFilesResponseSize`), left out when there are none, and the
    /// space available.
    mutating func listFiles(_ request: AnyRPCMessage, app: AppHandle) -> String {
        guard let content = self.apps[app]?.registration?.content else { return "not registered" }
        let names = content.files.keys.sorted().prefix(1000)
        self.respond(
            to: request,
            with: SDLListFilesResponse(
                success: true, resultCode: .success, filenames: names.isEmpty ? nil : Array(names),
                spaceAvailable: self.spaceAvailable(for: app)),
            app: app)
        return "\(content.files.count) file(s)"
    }

    /// DeleteFile: REJECTED for a file the app does not have, as Core answers.
    mutating func deleteFile(_ request: AnyRPCMessage, _ delete: SDLDeleteFileRequest, app: AppHandle) -> String {
        guard let content = self.apps[app]?.registration?.content else { return "not registered" }
        let name = delete.syncFileName
        if let problem = Self.fileNameProblem(name) {
            return self.failFile(request, .invalidData, problem, app: app)
        }
        guard let file = content.files[name] else {
            return self.failFile(request, .rejected, "\(name) does not exist", app: app)
        }
        self.updateContent(of: app) {
            $0.files[name] = nil
            $0.storedBytes -= file.size
            if $0.icon == name {
                $0.icon = nil
            }
        }
        self.respond(
            to: request,
            with: SDLDeleteFileResponse(success: true, resultCode: .success, spaceAvailable: self.spaceAvailable(for: app)),
            app: app)
        return "deleted \(name)"
    }

    /// SetAppIcon: the file must have been uploaded (INVALID_DATA otherwise, as Core answers).
    mutating func setAppIcon(_ request: AnyRPCMessage, _ icon: SDLSetAppIconRequest, app: AppHandle) -> String {
        guard let content = self.apps[app]?.registration?.content else { return "not registered" }
        let name = icon.syncFileName
        guard let file = content.files[name], file.size == file.length else {
            return self.fail(request, .invalidData, "\(name) has not been uploaded", app: app)
        }
        self.updateContent(of: app) { $0.icon = name }
        self.respond(to: request, with: SDLSetAppIconResponse(success: true, resultCode: .success), app: app)
        return "icon \(name)"
    }

    /// The bytes the app may still store, as `spaceAvailable` (an int32 in the spec).
    func spaceAvailable(for app: AppHandle) -> Int32 {
        let used = self.apps[app]?.registration?.content.storedBytes ?? 0
        return Int32(clamping: max(0, self.configuration.appStorageQuota - used))
    }

    /// Whether a dynamic image names a file the app uploaded completely; static images are the
    /// head unit's own and always exist.
    func imageExists(_ image: SDLImage?, for app: AppHandle) -> Bool {
        guard let image, image.imageType == .dynamic else { return true }
        guard let file = self.apps[app]?.registration?.content.files[image.value] else { return false }
        return file.size == file.length
    }

    mutating func updateContent(of app: AppHandle, _ change: (inout AppContent) -> Void) {
        guard var registration = self.apps[app]?.registration else { return }
        change(&registration.content)
        self.apps[app]?.registration = registration
    }

    /// A file response with `success` false that still says how much space is left, as Core's do.
    mutating func failFile(
        _ request: AnyRPCMessage, _ resultCode: SDLResult, _ info: String, app: AppHandle
    ) -> String {
        let space = self.spaceAvailable(for: app)
        let response: any RPCMessage =
            switch request.message {
            case is SDLPutFileRequest:
                SDLPutFileResponse(success: false, resultCode: resultCode, spaceAvailable: space, info: info)
            case is SDLDeleteFileRequest:
                SDLDeleteFileResponse(success: false, resultCode: resultCode, spaceAvailable: space, info: info)
            default:
                Self.failureResponse(functionID: request.functionID, resultCode: resultCode, info: info)
            }
        self.respond(to: request, with: response, app: app)
        return "\(resultCode): \(info)"
    }

    /// Core refuses names with a path separator (`file_system::IsFileNameValid`); an empty name
    /// cannot reach here (the spec's `minlength` is 1), "." and ".." would name folders.
    static func fileNameProblem(_ name: String) -> String? {
        if name.contains("/") || name == "." || name == ".." {
            return "Sync file name contains forbidden symbols"
        }
        return nil
    }

    /// CRC-32 (IEEE 802.3, reflected, as zlib's `crc32`), which PutFile's `crc` carries.
    static func crc32(_ bytes: ByteBuffer) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        bytes.withUnsafeReadableBytes { buffer in
            for byte in buffer {
                crc = Self.crcTable[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8)
            }
        }
        return crc ^ 0xFFFF_FFFF
    }

    private static let crcTable: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 {
            value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1
        }
        return value
    }
}
