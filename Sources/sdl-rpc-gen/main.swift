print("sdl-rpc-gen")
