public enum _SDLRPCPlaceholder {}
