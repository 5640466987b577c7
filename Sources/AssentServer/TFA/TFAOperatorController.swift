import AssentModel
import Foundation
import Hummingbird

/// `/api/v1/tfa/…`: login accounts, the relying party's second-factor start, the policy and remembered devices of
/// the default application.
struct TFAOperatorController {
    let applications: ApplicationService
    let accounts: TFAAccountService
    let flows: TFAService

    func addRoutes(to api: RouterGroup<AssentRequestContext>) {
        api.requiring(.tfaRead)
            .get("tfa/accounts/{userId}", use: account)
            .get("tfa/accounts/{userId}/devices", use: devices)
            .get("tfa/policy", use: policy)
        api.requiring(.tfaWrite)
            .post("tfa/accounts", use: createAccount)
            .delete("tfa/accounts/{userId}", use: deleteAccount)
            .post("tfa/accounts/{userId}/sign-out", use: signOut)
            .patch("tfa/accounts/{userId}", use: updateAccount)
            .post("tfa/accounts/{userId}/emails", use: addEmail)
            .delete("tfa/accounts/{userId}/factors/{id}", use: removeFactor)
            .delete("tfa/devices/{id}", use: revokeDevice)
            .put("tfa/policy", use: setPolicy)
            .post("tfa/logins", use: startLogin)
    }

    @Sendable func createAccount(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let body = try await HTTPSupport.decode(CreateTFAAccountRequest.self, from: request)
        let account = try await accounts.create(
            userId: body.userId, password: body.password, emails: body.emails ?? [], name: body.name,
            in: try await applications.selected(context), actor: context.actor)
        return try HTTPSupport.operatorJSON(Self.info(account), status: .created)
    }

    @Sendable func updateAccount(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let body = try await HTTPSupport.decode(UpdateTFAAccountRequest.self, from: request)
        guard body.name != nil || body.disabled != nil else {
            throw AssentServerError.invalidRequest("Nothing to change: send name or disabled.")
        }
        let (userId, application) = (try context.parameter("userId"), try await applications.selected(context))
        if let name = body.name {
            _ = try await accounts.rename(userId: userId, name: name, in: application, actor: context.actor)
        }
        if let disabled = body.disabled {
            try await accounts.setDisabled(disabled, userId: userId, in: application, actor: context.actor)
        }
        return try HTTPSupport.operatorJSON(Self.info(try await accounts.get(userId: userId, in: application)))
    }

    @Sendable func account(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let account = try await accounts.get(
            userId: try context.parameter("userId"), in: try await applications.selected(context))
        return try HTTPSupport.operatorJSON(Self.info(account))
    }

    @Sendable func deleteAccount(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await accounts.delete(
            userId: try context.parameter("userId"), in: try await applications.selected(context),
            actor: context.actor)
        return Response(status: .noContent)
    }

    /// Signs the person out everywhere (refresh and access tokens, single-sign-on and browser sessions).
    @Sendable func signOut(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let userId = try context.parameter("userId")
        let ended = try await accounts.signOutEverywhere(
            userId: userId, in: try await applications.selected(context), actor: context.actor)
        return try HTTPSupport.operatorJSON(
            TFASignOutResponse(userId: userId, refreshTokensRevoked: ended.refreshTokens, sessionsEnded: ended.sessions)
        )
    }

    @Sendable func addEmail(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let body = try await HTTPSupport.decode(AddTFAEmailRequest.self, from: request)
        let factor = try await accounts.addEmail(
            body.email, userId: try context.parameter("userId"), in: try await applications.selected(context),
            actor: context.actor)
        return try HTTPSupport.operatorJSON(Self.info(factor), status: .created)
    }

    @Sendable func removeFactor(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await accounts.removeFactor(
            id: try context.parameter("id"), userId: try context.parameter("userId"),
            in: try await applications.selected(context), actor: context.actor)
        return Response(status: .noContent)
    }

    @Sendable func devices(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let devices = try await accounts.rememberedDevices(
            userId: try context.parameter("userId"), in: try await applications.selected(context))
        return try HTTPSupport.operatorJSON(RememberedDeviceList(devices: devices.map(Self.info)))
    }

    @Sendable func revokeDevice(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try await accounts.revokeDevice(
            id: try context.parameter("id"), in: try await applications.selected(context), actor: context.actor)
        return Response(status: .noContent)
    }

    @Sendable func policy(_ request: Request, context: AssentRequestContext) async throws -> Response {
        try HTTPSupport.operatorJSON(try await flows.policy(try await applications.selected(context).id))
    }

    @Sendable func setPolicy(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let policy = try await HTTPSupport.decode(TFAPolicy.self, from: request)
        let applicationId = try await applications.selected(context).id
        try await flows.setPolicy(policy, applicationId: applicationId, actor: context.actor)
        return try HTTPSupport.operatorJSON(try await flows.policy(applicationId))
    }

    @Sendable func startLogin(_ request: Request, context: AssentRequestContext) async throws -> Response {
        let body = try await HTTPSupport.decode(StartTFALoginRequest.self, from: request)
        let outcome = try await flows.secondFactor(
            application: try await applications.selected(context), userId: body.userId, firstFactor: nil,
            deviceToken: body.deviceToken)
        switch outcome {
        case .success(let success): return try HTTPSupport.operatorJSON(StartTFALoginResponse(success: success))
        case .interruption(let interruption):
            return try HTTPSupport.operatorJSON(StartTFALoginResponse(interruption: interruption))
        }
    }

    static func info(_ account: TFAAccountService.Account) -> TFAAccountInfo {
        TFAAccountInfo(
            userId: account.record.userId, name: account.record.displayName,
            hasPassword: account.record.passwordHash != nil,
            factors: account.factors.map(Self.info), createdAt: Date(millis: account.record.createdAt),
            disabledAt: account.record.disabledAt.map(Date.init(millis:)), language: account.record.language)
    }

    static func info(_ factor: TFAFactorRecord) -> TFAFactorInfo {
        let obfuscated: String? =
            switch factor.provider {
            case .email: factor.destination.map(CodeFactor.obfuscateEmail)
            case .phone: factor.destination.map(CodeFactor.obfuscatePhone)
            // A browser that approves sign-ins: what it is, never its push endpoint.
            case .push: BrowserApprovers.subscription(of: factor).map { "browser: \($0.label)" }
            default: nil
            }
        return TFAFactorInfo(
            id: factor.id, provider: factor.provider, obfuscated: obfuscated, createdAt: Date(millis: factor.createdAt),
            lastVerification: factor.lastVerifiedAt.map(Date.init(millis:)))
    }

    static func info(_ device: RememberedDeviceRecord) -> RememberedDeviceInfo {
        RememberedDeviceInfo(
            id: device.id, userId: device.userId, createdAt: Date(millis: device.createdAt),
            expiresAt: Date(millis: device.expiresAt), lastUsedAt: device.lastUsedAt.map(Date.init(millis:)),
            revokedAt: device.revokedAt.map(Date.init(millis:)))
    }
}
