/// Facts about the SDK that an app may show or log.
public enum AssentSDK {
    /// The PowerAuth protocol version the SDK speaks.
    public static let protocolVersion = "3.3"
}
