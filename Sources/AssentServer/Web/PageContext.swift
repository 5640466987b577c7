import Mustache

/// The bundled Mustache templates (`Resources/web/NAME.mustache`).
enum PageTemplate: String, CaseIterable, Sendable {
    case layout
    case loginSignIn = "login-signin"
    case loginFactor = "login-factor"
    case loginDestination = "login-destination"
    case loginCode = "login-code"
    case loginPush = "login-push"
    case loginPasskey = "login-passkey"
    case account
    case accountCodes = "account-codes"
    case loginDone = "login-done"
    case loginLogout = "login-logout"
    case loginConsent = "login-consent"
    case approve
    case approveOffline = "approve-offline"
    case approveSignIn = "approve-sign-in"
    case error
    case home
    case consoleLayout = "console-layout"
    case consoleSignIn = "console-signin"
    case consoleSetup = "console-setup"
    case consoleSignInPasskey = "console-signin-passkey"
    case consoleSignInPhone = "console-signin-phone"
    case consoleMe = "console-me"
    case consoleError = "console-error"
    case consoleDashboard = "console-dashboard"
    case consoleUsers = "console-users"
    case consoleUser = "console-user"
    case consoleActivation = "console-activation"
    case consoleOperations = "console-operations"
    case consoleOperation = "console-operation"
    case consoleNewOperation = "console-new-operation"
    case consoleAudit = "console-audit"
    case consoleConfirm = "console-confirm"
    case accountConfirm = "account-confirm"
    /// A partial: the question before an action that cannot be undone (the console's and `/account`'s).
    case confirmForm = "confirm-form"
    case consoleClients = "console-clients"
    case consoleApplication = "console-application"
    case consoleOperators = "console-operators"
    /// A partial: the push delivery trace on the activation and operation pages.
    case consolePushDeliveries = "console-push-deliveries"
}

/// What one template is filled with: a struct whose stored properties are the names the template uses
/// (swift-mustache reads them by reflection: a `nil` optional or a `false` skips a section, an array repeats it).
protocol PageContext: Sendable {
    static var template: PageTemplate { get }
}

/// A page's own values over the frame every page of its kind shows (the layout's title and application name, the
/// console's navigation and form token): a name is looked up in `content` first, then in `frame`.
struct FramedPage<Frame: Sendable, Content: PageContext>: MustacheParent, Sendable {
    let frame: Frame
    let content: Content

    func child(named name: String) -> Any? {
        // `{{#t}}…{{/t}}` translates into the frame's language, `{{lang}}` names it (English for frames that are not
        // translated: the console's).
        let language = (frame as? any TranslatedFrame)?.language ?? "en"
        switch name {
        case "t": return Texts(language).lambda
        case "lang": return language
        default: return Self.value(named: name, in: content) ?? Self.value(named: name, in: frame)
        }
    }

    /// The stored property `name` of `object`, unwrapped when it is an optional (`nil` when it is `nil`).
    private static func value(named name: String, in object: Any) -> Any? {
        guard let value = Mirror(reflecting: object).children.first(where: { $0.label == name })?.value else {
            return nil
        }
        let mirror = Mirror(reflecting: value)
        guard mirror.displayStyle == .optional else { return value }
        return mirror.children.first?.value
    }
}

/// The frame of the pages on `layout`: the title, the application's name, and a sentence shown once.
struct LayoutFrame: TranslatedFrame {
    var title: String
    var application: String
    var message: String?
    /// The application's accent colour and logo, when it has them.
    var brand: PageBrand? = nil
    /// The page's language: English unless the page chose the person's (``Languages/choose``).
    var language = "en"

    func translated() -> LayoutFrame {
        let texts = Texts(language)
        var frame = self
        frame.title = texts(title)
        frame.message = message.map { texts($0) }
        return frame
    }
}

/// A row of a list a page shows: a label and its value (`iso` when the value is a time, for the browser's clock).
struct LabeledValue: Sendable {
    var label: String
    var value: String
    var iso: String?
}

/// One choice of a radio group or select: the value posted, what the person reads, whether it starts selected.
struct Choice: Sendable {
    var id: String
    var label: String
    var checked = false
}

/// What a browser meets at `/` and at an address with no page: where a person can go.
struct HomePage: PageContext {
    static let template = PageTemplate.home
    /// The address has no page (404); `false` at `/`.
    var notFound: Bool
}

/// Where a question is asked: the console or `/account` (each has its frame).
protocol ConfirmPlace: Sendable {
    static var template: PageTemplate { get }
}

/// The question before an action that cannot be undone or stops a person, naming what it touches; its form posts
/// `fields` again to `action` with `confirm=yes` (no script needed), and Back returns to `back`.
struct ConfirmPage<Place: ConfirmPlace>: PageContext {
    static var template: PageTemplate { Place.template }
    struct Field: Sendable {
        var name: String
        var value: String
    }
    var question: String
    var consequence: String
    var action: String
    var button: String
    var back: String
    var fields: [Field]

    init(question: String, consequence: String, action: String, button: String, back: String, fields: [String: String])
    {
        (self.question, self.consequence, self.action, self.button, self.back) = (
            question, consequence, action, button, back
        )
        self.fields = fields.sorted { $0.key < $1.key }.map { Field(name: $0.key, value: $0.value) }
    }
}

/// The console's questions.
enum InConsole: ConfirmPlace { static let template = PageTemplate.consoleConfirm }
/// `/account`'s questions.
enum InAccount: ConfirmPlace { static let template = PageTemplate.accountConfirm }

/// The error page of the hosted pages.
struct ErrorPage: PageContext {
    static let template = PageTemplate.error
    var detail: String
    var next: String?
}
