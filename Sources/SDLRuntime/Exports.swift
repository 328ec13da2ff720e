// The types the runtimes' API is written in: an app or head unit that imports SDLRuntime (or
// SDLNIO, which re-exports it) needs no other import for them. ByteBuffer, EventLoop and TimeAmount
// (NIOCore), the RPC messages and structs (SDLRPC), sessions, services and video parameters
// (SDLSession), versions and frames (SDLProtocol).
@_exported import NIOCore
@_exported import SDLProtocol
@_exported import SDLRPC
@_exported import SDLSession
