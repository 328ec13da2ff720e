print("sdl")
