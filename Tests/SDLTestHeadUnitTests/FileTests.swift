import NIOCore
import SDLRPC
import SDLTestHeadUnit
import Testing

@Suite("Files: PutFile, ListFiles, DeleteFile, SetAppIcon")
struct FileTests {
    let app = AppHandle(1)
    let other = AppHandle(2)
    static let quota = 104_857_600

    func bytes(_ count: Int) -> ByteBuffer { ByteBuffer(repeating: 0x5A, count: count) }

    @Test("PutFile stores, ListFiles lists in name order with spaceAvailable (no filenames while empty), DeleteFile frees; a missing file is REJECTED")
    func storeListDelete() throws {
        var harness = Harness()
        harness.register(self.app, name: "Files")

        let empty = harness.send(SDLListFilesRequest(), from: self.app)
        #expect(empty.sends == ["app1 <- ListFiles response #2"])
        #expect(
            try empty.only(SDLListFilesResponse.self, to: self.app)
                == SDLListFilesResponse(success: true, resultCode: .success, spaceAvailable: Int32(Self.quota)))

        let first = harness.put("b.png", self.bytes(10), from: self.app)
        #expect(first.sends == ["app1 <- PutFile response #3"])
        #expect(
            try first.only(SDLPutFileResponse.self, to: self.app)
                == SDLPutFileResponse(success: true, resultCode: .success, spaceAvailable: Int32(Self.quota - 10)))
        #expect(first.transcript?.outcome == "stored b.png, 10 bytes at offset 0")
        let second = harness.put("a.png", self.bytes(5), from: self.app)
        #expect(try second.only(SDLPutFileResponse.self, to: self.app).spaceAvailable == Int32(Self.quota - 15))

        let listed = try harness.send(SDLListFilesRequest(), from: self.app).only(SDLListFilesResponse.self, to: self.app)
        #expect(listed.filenames == ["a.png", "b.png"] && listed.spaceAvailable == Int32(Self.quota - 15))

        let deleted = harness.send(SDLDeleteFileRequest(syncFileName: "b.png"), from: self.app)
        #expect(deleted.sends == ["app1 <- DeleteFile response #6"])
        #expect(
            try deleted.only(SDLDeleteFileResponse.self, to: self.app)
                == SDLDeleteFileResponse(success: true, resultCode: .success, spaceAvailable: Int32(Self.quota - 5)))
        let again = harness.send(SDLDeleteFileRequest(syncFileName: "b.png"), from: self.app)
        #expect(
            try again.only(SDLDeleteFileResponse.self, to: self.app)
                == SDLDeleteFileResponse(
                    success: false, resultCode: .rejected, spaceAvailable: Int32(Self.quota - 5), info: "b.png does not exist"))
        let after = try harness.send(SDLListFilesRequest(), from: self.app).only(SDLListFilesResponse.self, to: self.app)
        #expect(after.filenames == ["a.png"])
    }

    @Test("PutFile in parts: each offset must continue the file, bytes may not pass length; the icon needs the whole file")
    func parts() throws {
        var harness = Harness()
        harness.register(self.app, name: "Files")
        let start = harness.put("icon.png", self.bytes(4), length: 10, from: self.app)
        #expect(try start.only(SDLPutFileResponse.self, to: self.app).resultCode == .success)
        #expect(start.transcript?.outcome == "stored icon.png, 4 bytes at offset 0 (4 of 10)")

        let early = harness.send(SDLSetAppIconRequest(syncFileName: "icon.png"), from: self.app)
        expectFailure(early, to: self.app, function: "SetAppIcon", correlationID: 3, .invalidData)

        let gap = harness.put("icon.png", self.bytes(2), offset: 2, length: 10, from: self.app)
        #expect(
            try gap.only(SDLPutFileResponse.self, to: self.app)
                == SDLPutFileResponse(
                    success: false, resultCode: .invalidData, spaceAvailable: Int32(Self.quota - 4),
                    info: "offset 2 does not continue icon.png (4 bytes stored)"))
        let tooLong = harness.put("icon.png", self.bytes(7), offset: 4, length: 10, from: self.app)
        #expect(try tooLong.only(SDLPutFileResponse.self, to: self.app).info == "11 bytes exceed the file's length 10")
        let rest = harness.put("icon.png", self.bytes(6), offset: 4, length: 10, from: self.app)
        #expect(try rest.only(SDLPutFileResponse.self, to: self.app).spaceAvailable == Int32(Self.quota - 10))
        #expect(rest.transcript?.outcome == "stored icon.png, 6 bytes at offset 4")

        let icon = harness.send(SDLSetAppIconRequest(syncFileName: "icon.png"), from: self.app)
        #expect(icon.sends == ["app1 <- SetAppIcon response #7"])
        #expect(try icon.only(SDLSetAppIconResponse.self, to: self.app) == SDLSetAppIconResponse(success: true, resultCode: .success))
        let missing = harness.send(SDLSetAppIconRequest(syncFileName: "none.png"), from: self.app)
        expectFailure(missing, to: self.app, function: "SetAppIcon", correlationID: 8, .invalidData)
    }

    @Test("crc is checked (CRC-32 of the part): CORRUPTED_DATA when it does not match")
    func crc() throws {
        var harness = Harness()
        harness.register(self.app, name: "Files")
        let data = ByteBuffer(string: "123456789")
        let wrong = harness.put("check", data, crc: 1, from: self.app)
        #expect(
            try wrong.only(SDLPutFileResponse.self, to: self.app)
                == SDLPutFileResponse(
                    success: false, resultCode: .corruptedData, spaceAvailable: Int32(Self.quota),
                    info: "CRC check on file failed"))
        // 0xCBF43926: the CRC-32 check value of "123456789".
        let right = harness.put("check", data, crc: 0xCBF4_3926, from: self.app)
        #expect(try right.only(SDLPutFileResponse.self, to: self.app).resultCode == .success)
    }

    @Test("a system file goes to the HMI: SUCCESS, but neither listed nor counted against the quota")
    func systemFile() throws {
        var harness = Harness()
        harness.register(self.app, name: "Files")
        let request = SDLPutFileRequest(syncFileName: "update.bin", fileType: .binary, systemFile: true)
        let outputs = harness.headUnit.received(
            AnyRPCMessage(request, correlationID: 2, bulkData: self.bytes(100)), from: self.app, now: harness.now)
        checkSent(outputs)
        #expect(outputs.sends == ["app1 <- PutFile response #2"])
        #expect(
            try outputs.only(SDLPutFileResponse.self, to: self.app)
                == SDLPutFileResponse(success: true, resultCode: .success, spaceAvailable: Int32(Self.quota)))
        #expect(outputs.transcript?.outcome == "passed update.bin (100 bytes) to the HMI as a system file")
        let listed = try harness.send(SDLListFilesRequest(), from: self.app, correlationID: 3).only(SDLListFilesResponse.self, to: self.app)
        #expect(listed.filenames == nil && listed.spaceAvailable == Int32(Self.quota))
    }

    @Test("INVALID_DATA for no bytes and for a name with a path in it")
    func invalidFiles() throws {
        var harness = Harness()
        harness.register(self.app, name: "Files")
        let empty = harness.put("empty", ByteBuffer(), from: self.app)
        #expect(try empty.only(SDLPutFileResponse.self, to: self.app).info == "Binary data empty")
        expectFailure(empty, to: self.app, function: "PutFile", correlationID: 2, .invalidData)
        let path = harness.put("../escape", self.bytes(1), from: self.app)
        expectFailure(path, to: self.app, function: "PutFile", correlationID: 3, .invalidData)
        let deletePath = harness.send(SDLDeleteFileRequest(syncFileName: "a/b"), from: self.app)
        expectFailure(deletePath, to: self.app, function: "DeleteFile", correlationID: 4, .invalidData)
    }

    @Test("the quota and the file count bound what an app may claim: OUT_OF_MEMORY beyond; a file written again from offset 0 frees its old bytes")
    func bounds() throws {
        var harness = Harness {
            $0.appStorageQuota = 100
            $0.maxFilesPerApp = 2
        }
        harness.register(self.app, name: "Files")
        #expect(try harness.put("a", self.bytes(60), from: self.app).only(SDLPutFileResponse.self, to: self.app).spaceAvailable == 40)
        let over = harness.put("b", self.bytes(50), from: self.app)
        #expect(
            try over.only(SDLPutFileResponse.self, to: self.app)
                == SDLPutFileResponse(
                    success: false, resultCode: .outOfMemory, spaceAvailable: 40, info: "Not enough space to store b"))
        let replaced = harness.put("a", self.bytes(90), from: self.app)
        #expect(try replaced.only(SDLPutFileResponse.self, to: self.app).spaceAvailable == 10)
        #expect(try harness.put("b", self.bytes(5), from: self.app).only(SDLPutFileResponse.self, to: self.app).spaceAvailable == 5)
        let third = harness.put("c", self.bytes(1), from: self.app)
        #expect(try third.only(SDLPutFileResponse.self, to: self.app).info == "the app already stores 2 files")
        expectFailure(third, to: self.app, function: "PutFile", correlationID: 6, .outOfMemory)
    }

    @Test("in HMI NONE an app may send 5 PutFile, 5 ListFiles and 5 DeleteFile (counted apart), then REJECTED, as Core's *InNone limits; not once activated")
    func limitsInNone() throws {
        var harness = Harness { $0.activationLevel = nil }
        harness.register(self.app, name: "Files")
        for index in 0..<5 {
            let put = harness.put("f\(index)", self.bytes(1), from: self.app)
            #expect(try put.only(SDLPutFileResponse.self, to: self.app).resultCode == .success)
        }
        let sixth = harness.put("f5", self.bytes(1), from: self.app)
        #expect(
            try sixth.only(SDLPutFileResponse.self, to: self.app)
                == SDLPutFileResponse(
                    success: false, resultCode: .rejected, spaceAvailable: Int32(Self.quota - 5),
                    info: "too many PutFile requests in HMI NONE (5)"))
        for _ in 0..<5 {
            let list = harness.send(SDLListFilesRequest(), from: self.app)
            #expect(try list.only(SDLListFilesResponse.self, to: self.app).filenames?.count == 5)
        }
        expectFailure(harness.send(SDLListFilesRequest(), from: self.app), to: self.app, function: "ListFiles", correlationID: 13, .rejected)
        let delete = harness.send(SDLDeleteFileRequest(syncFileName: "f0"), from: self.app)
        #expect(try delete.only(SDLDeleteFileResponse.self, to: self.app).resultCode == .success)

        _ = harness.headUnit.setHMILevel(.full, of: self.app)
        let full = harness.put("f5", self.bytes(1), from: self.app)
        #expect(try full.only(SDLPutFileResponse.self, to: self.app).resultCode == .success)
        #expect(try harness.send(SDLListFilesRequest(), from: self.app).only(SDLListFilesResponse.self, to: self.app).filenames?.count == 5)
    }

    @Test("each app has its own store, and the store goes with the registration")
    func perApp() throws {
        var harness = Harness()
        harness.register(self.app, name: "Files")
        harness.register(self.other, name: "Other")
        _ = harness.put("mine", self.bytes(3), from: self.app)
        let others = try harness.send(SDLListFilesRequest(), from: self.other).only(SDLListFilesResponse.self, to: self.other)
        #expect(others.filenames == nil && others.spaceAvailable == Int32(Self.quota))

        _ = harness.send(SDLUnregisterAppInterfaceRequest(), from: self.app)
        _ = harness.send(registration(name: "Files"), from: self.app)
        let after = try harness.send(SDLListFilesRequest(), from: self.app).only(SDLListFilesResponse.self, to: self.app)
        #expect(after.filenames == nil && after.spaceAvailable == Int32(Self.quota))
    }
}

extension Harness {
    /// A PutFile of GRAPHIC_PNG with these bytes as its bulk data.
    mutating func put(
        _ name: String, _ bytes: ByteBuffer, offset: Int32? = nil, length: Int32? = nil, crc: Int64? = nil,
        from app: AppHandle, sourceLocation: SourceLocation = #_sourceLocation
    ) -> [HeadUnitOutput] {
        let request = SDLPutFileRequest(syncFileName: name, fileType: .graphicPng, offset: offset, length: length, crc: crc)
        let correlationID = self.nextCorrelationID(of: app)
        let outputs = self.headUnit.received(
            AnyRPCMessage(request, correlationID: correlationID, bulkData: bytes), from: app, now: self.now)
        checkSent(outputs, sourceLocation: sourceLocation)
        return outputs
    }
}
