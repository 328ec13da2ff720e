public enum _SDLRPCGeneratorPlaceholder {}
