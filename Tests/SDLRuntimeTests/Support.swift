import NIOCore
import SDLAppScripts
import SDLHeadUnitRuntime
import Testing
