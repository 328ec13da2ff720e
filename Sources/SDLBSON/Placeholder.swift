public enum _SDLBSONPlaceholder {}
